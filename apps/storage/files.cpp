// The file store's routes: names checked, bodies streamed through a buffer of the request's own to the pool's
// threads, which do every system call that may wait on the disk.
#include "apps/storage/files.hpp"

#include <hotpath/server/blocking.hpp>

#include <hotpath/http/char_class.hpp>

#include <boost/json.hpp>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

namespace hotpath::apps {

namespace {

constexpr std::size_t buffer_bytes = 64 * 1024;
constexpr std::size_t max_name_bytes = 255;

struct file_store {
    explicit file_store(const file_store_options& o)
        : root(o.root.string()), max_file_bytes(o.max_file_bytes), pool(o.pool) {
        while (root.size() > 1 && root.back() == '/') {
            root.pop_back();
        }
    }
    std::string root; // ends without '/'
    std::uint64_t max_file_bytes;
    blocking_pool pool;
};

// A file a request works on, shared with the pool's threads: whichever lets it go last (the request, or a call
// still running when the request was abandoned) closes it, and removes the temporary file an upload did not
// commit. The buffer lives here for the same reason: a call may still read it after the request is gone.
struct open_file {
    int fd = -1;
    std::string temporary; // an upload's, until renamed
    std::unique_ptr<char[]> buffer{new char[buffer_bytes]};

    open_file() = default;
    open_file(const open_file&) = delete;
    open_file& operator=(const open_file&) = delete;
    ~open_file() {
        if (fd >= 0) {
            ::close(fd);
        }
        if (!temporary.empty()) {
            ::unlink(temporary.c_str());
        }
    }
};

bool name_char(char c) noexcept {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
           c == '.';
}

// 0, or errno.
int write_all(int fd, const char* data, std::size_t size) noexcept {
    while (size > 0) {
        const ssize_t n = ::write(fd, data, size);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return errno;
        }
        data += n;
        size -= static_cast<std::size_t>(n);
    }
    return 0;
}

std::atomic<std::uint64_t> upload_counter{0};

std::string join(const std::string& folder, const std::string& name) {
    return folder + "/" + name;
}

// An upload's temporary file beside its final one; it starts with '.', which no stored name does.
std::string temporary_name(const std::string& folder) {
    return folder + "/.upload-" + std::to_string(::getpid()) + "-" + std::to_string(upload_counter.fetch_add(1));
}

// The two names of a request, or a 400 said.
bool names_of(request& req, response& res, std::string& container, std::string& name) {
    if (!valid_file_name(req.param("container"), container) || !valid_file_name(req.param("name"), name)) {
        res.problem(http::status::bad_request,
                    "container and file names are 1 to 255 letters, digits, '-', '_' or '.', not starting with '.'");
        return false;
    }
    return true;
}

void answer_errno(response& res, int error, std::string_view doing) {
    if (error == ENOENT) {
        res.problem(http::status::not_found, "no such file");
        return;
    }
    const auto status =
        error == ENOSPC || error == EDQUOT ? http::status::insufficient_storage : http::status::internal_server_error;
    res.problem(status, std::string(doing) + ": " + std::strerror(error));
}

task<void> put_file(std::shared_ptr<file_store> store, request& req, response& res) {
    std::string container;
    std::string name;
    if (!names_of(req, res, container, name)) {
        co_return; // the body is not read: the connection closes after the answer
    }
    auto file = std::make_shared<open_file>();
    // Paths as plain strings made outside the coroutine's expressions (a temporary std::filesystem::path in one
    // was destroyed twice by GCC 12's coroutines).
    const std::string folder = join(store->root, container);
    const std::string final_path = join(folder, name);
    const std::string temporary = temporary_name(folder);
    // The function and the call named, not temporaries: GCC 12 destroyed such temporaries twice in a coroutine.
    auto opened_fn = [file, folder, temporary]() -> int {
        if (::mkdir(folder.c_str(), 0755) != 0 && errno != EEXIST) {
            return errno;
        }
        file->fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (file->fd < 0) {
            return errno;
        }
        file->temporary = temporary;
        return 0;
    };
    auto opened_call = store->pool.run(std::move(opened_fn), req.aborted());
    auto opened = co_await opened_call;
    if (!opened) {
        answer_blocking_failure(res, opened.error());
        co_return;
    }
    if (*opened != 0) {
        answer_errno(res, *opened, "cannot create the file");
        co_return;
    }
    std::uint64_t bytes = 0;
    for (;;) {
        auto piece = co_await req.read_body();
        if (!piece) {
            co_return; // the connection answers the body's failure; the temporary file goes with `file`
        }
        if (piece->empty()) {
            break;
        }
        bytes += piece->size();
        for (std::string_view rest = *piece; !rest.empty();) {
            const std::size_t n = std::min(rest.size(), buffer_bytes);
            std::memcpy(file->buffer.get(), rest.data(), n);
            rest.remove_prefix(n);
            // The function and the call named, not temporaries: GCC 12 destroyed such temporaries twice in a coroutine.
            auto written_fn = [file, n] { return write_all(file->fd, file->buffer.get(), n); };
            auto written_call = store->pool.run(std::move(written_fn), req.aborted());
            auto written = co_await written_call;
            if (!written) {
                answer_blocking_failure(res, written.error());
                co_return;
            }
            if (*written != 0) {
                answer_errno(res, *written, "cannot write the file");
                co_return;
            }
        }
    }
    // Durable, then visible under its name whole: a crash leaves either the old file or the new one.
    // The function and the call named, not temporaries: GCC 12 destroyed such temporaries twice in a coroutine.
    auto committed_fn = [file, folder, final_path]() -> int {
        if (::fsync(file->fd) != 0) {
            return errno;
        }
        if (::rename(file->temporary.c_str(), final_path.c_str()) != 0) {
            return errno;
        }
        file->temporary.clear();
        const int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir >= 0) {
            ::fsync(dir);
            ::close(dir);
        }
        return 0;
    };
    auto committed_call = store->pool.run(std::move(committed_fn));
    auto committed = co_await committed_call;
    if (!committed) {
        answer_blocking_failure(res, committed.error());
        co_return;
    }
    if (*committed != 0) {
        answer_errno(res, *committed, "cannot store the file");
        co_return;
    }
    boost::json::object o;
    o["container"] = container;
    o["name"] = name;
    o["bytes"] = bytes;
    res.text(boost::json::serialize(o), "application/json");
    res.status(http::status::created);
}

task<void> get_file(std::shared_ptr<file_store> store, request& req, response& res) {
    std::string container;
    std::string name;
    if (!names_of(req, res, container, name)) {
        co_return;
    }
    auto file = std::make_shared<open_file>();
    const std::string path = join(join(store->root, container), name);
    // The function and the call named, not temporaries: GCC 12 destroyed such temporaries twice in a coroutine.
    auto opened_fn = [file, path]() -> std::int64_t {
        file->fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        struct stat st {};
        if (file->fd < 0 || ::fstat(file->fd, &st) != 0) {
            return -errno;
        }
        if (!S_ISREG(st.st_mode)) {
            return -ENOENT;
        }
        return st.st_size;
    };
    auto opened_call = store->pool.run(std::move(opened_fn), req.aborted());
    auto opened = co_await opened_call;
    if (!opened) {
        answer_blocking_failure(res, opened.error());
        co_return;
    }
    if (*opened < 0) {
        answer_errno(res, static_cast<int>(-*opened), "cannot open the file");
        co_return;
    }
    const auto size = static_cast<std::uint64_t>(*opened);
    res.content_type("application/octet-stream");
    res.content_length(size);
    if (req.method() == http::method::head || size == 0) {
        (void)co_await res.write({}); // the fields alone
        co_return;
    }
    for (std::uint64_t offset = 0; offset < size;) {
        // The function and the call named, not temporaries: GCC 12 destroyed such temporaries twice in a coroutine.
        auto got_fn = [file, offset]() -> ssize_t {
            const ssize_t n = ::pread(file->fd, file->buffer.get(), buffer_bytes, static_cast<off_t>(offset));
            return n < 0 ? -errno : n;
        };
        auto got_call = store->pool.run(std::move(got_fn), req.aborted());
        auto got = co_await got_call;
        if (!got || *got <= 0) {
            co_return; // shorter than its length: the connection closes, and the client sees it
        }
        const auto n = static_cast<std::size_t>(*got);
        if (auto sent = co_await res.write({file->buffer.get(), n}); !sent) {
            co_return; // the client went away
        }
        offset += n;
    }
}

task<void> delete_file(std::shared_ptr<file_store> store, request& req, response& res) {
    std::string container;
    std::string name;
    if (!names_of(req, res, container, name)) {
        co_return;
    }
    const std::string path = join(join(store->root, container), name);
    auto removed_fn = [path]() -> int { return ::unlink(path.c_str()) == 0 ? 0 : errno; };
    auto removed_call = store->pool.run(std::move(removed_fn), req.aborted());
    auto removed = co_await removed_call;
    if (!removed) {
        answer_blocking_failure(res, removed.error());
        co_return;
    }
    if (*removed != 0) {
        answer_errno(res, *removed, "cannot remove the file");
        co_return;
    }
    res.status(http::status::no_content);
}

} // namespace

bool valid_file_name(std::string_view segment, std::string& decoded) {
    decoded.clear();
    for (std::size_t i = 0; i < segment.size(); ++i) {
        char c = segment[i];
        if (c == '%') {
            if (i + 2 >= segment.size()) {
                return false;
            }
            const int hi = http::char_class::hex_digit_value(segment[i + 1]);
            const int lo = http::char_class::hex_digit_value(segment[i + 2]);
            if (hi < 0 || lo < 0) {
                return false;
            }
            c = static_cast<char>(hi * 16 + lo);
            i += 2;
        }
        if (!name_char(c) || decoded.size() == max_name_bytes) {
            return false;
        }
        decoded.push_back(c);
    }
    return !decoded.empty() && decoded.front() != '.';
}

void map_file_store(app& routes, const file_store_options& options) {
    std::filesystem::create_directories(options.root);
    auto store = std::make_shared<file_store>(options);
    routes.expose(store->pool.metrics());
    routes.streaming(
        http::method::put, "/files/{container}/{name}",
        [store](request& req, response& res) { return put_file(store, req, res); }, options.max_file_bytes);
    routes.get("/files/{container}/{name}", [store](request& req, response& res) { return get_file(store, req, res); });
    routes.del("/files/{container}/{name}",
               [store](request& req, response& res) { return delete_file(store, req, res); });
}

} // namespace hotpath::apps
