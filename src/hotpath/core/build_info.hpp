// Which build this is: the project's version and the git commit it was built from (for /metrics and the CLI).
#pragma once

#include <string_view>

namespace hotpath {

// The project's version, as CMake's project() gives it: "0.1.0". Static storage.
std::string_view build_version() noexcept;

// The first 12 hex digits of the git commit the build was configured from, or "unknown" when the source was not a
// git checkout or git was missing. Taken when CMake configures, which a new commit makes it do again. Static
// storage.
std::string_view build_commit() noexcept;

} // namespace hotpath
