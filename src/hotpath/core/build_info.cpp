// The version and commit, given to this one file by CMake (src/CMakeLists.txt): a new commit recompiles only it.
#include <hotpath/core/build_info.hpp>

namespace hotpath {

std::string_view build_version() noexcept {
    return HOTPATH_VERSION;
}

std::string_view build_commit() noexcept {
    return HOTPATH_COMMIT;
}

} // namespace hotpath
