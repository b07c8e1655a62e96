// Case 4's storage (the write-up's blob upload): files streamed to and from a data folder, never whole in memory,
// their disk work on a bounded pool of threads so that a slow disk holds requests, never a loop.
#pragma once

#include <hotpath/net/blocking_pool.hpp>
#include <hotpath/server/app.hpp>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string_view>

namespace hotpath::apps {

struct file_store_options {
    // Where containers are folders and files are files; made if missing.
    std::filesystem::path root;
    // A larger upload is refused: 413 up front when its Content-Length says so, else when it passes the limit.
    std::uint64_t max_file_bytes = std::uint64_t{4} << 30;
    // The threads that write, read, fsync and rename (a disk that stalls holds these, not the loops), and the
    // calls that may wait for one: past that, 503 with Retry-After.
    blocking_pool_options pool{.threads = 4, .queue_capacity = 256, .name = "files"};
};

// Maps, for {container} and {name} of 1 to 255 characters out of letters, digits, '-', '_' and '.', not starting
// with '.' (percent-encoding decoded first, so "%2e%2e" is ".." and refused like it; '/', '\' and NUL never
// pass): anything else is 400, so that no name leaves the root.
// - PUT /files/{container}/{name}: streams the body to a temporary file in the container (made if missing) as it
//   arrives, then fsync, rename over the final name, fsync of the folder: 201 {"container","name","bytes"}. A
//   failed or abandoned upload leaves no file under the final name (its temporary one is removed); concurrent
//   uploads to one name end with one of them, whole.
// - GET /files/{container}/{name}: streams the file back with Content-Length (HEAD: the fields only); 404 when
//   missing.
// - DELETE /files/{container}/{name}: 204, or 404 when missing.
// The pool is made here, owned by the routes, and its metrics go on the app's metrics page. Throws
// std::filesystem::filesystem_error when the root cannot be made.
void map_file_store(app& routes, const file_store_options& options);

// Whether `segment` (a path parameter, percent-encoded as sent) names a container or file; the decoded name in
// `decoded` (at most 255 bytes).
bool valid_file_name(std::string_view segment, std::string& decoded);

} // namespace hotpath::apps
