// The access log's rings and its writer thread: formatting and writing happen here, never on a loop.
#include <hotpath/server/access_log.hpp>

#include <hotpath/server/app.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <ctime>

namespace hotpath {

namespace {

// How often the writer drains the rings: a line is on disk within this, and a ring holds this long's requests.
constexpr std::chrono::milliseconds drain_period{50};

void append_escaped_json(std::string& out, std::string_view text) {
    for (const char c : text) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            fmt::format_to(std::back_inserter(out), "\\u{:04x}", static_cast<unsigned>(c));
        } else {
            out += c;
        }
    }
}

// The request line's parts as the Common Log Format has them: a quote or a backslash escaped as Apache does.
void append_escaped_clf(std::string& out, std::string_view text) {
    for (const char c : text) {
        if (c == '"' || c == '\\') {
            out += '\\';
        }
        out += c;
    }
}

std::string_view peer_text(const access_record& r, char (&buffer)[INET6_ADDRSTRLEN]) {
    if (r.peer_family == AF_INET || r.peer_family == AF_INET6) {
        if (::inet_ntop(r.peer_family, r.peer_address, buffer, sizeof(buffer)) != nullptr) {
            return buffer;
        }
    }
    return "-";
}

double ms(std::uint64_t ns) {
    return static_cast<double>(ns) / 1e6;
}

} // namespace

access_ring::access_ring(std::size_t capacity)
    : slots_(new access_record[std::bit_ceil(std::max<std::size_t>(capacity, 2))]),
      mask_(std::bit_ceil(std::max<std::size_t>(capacity, 2)) - 1) {}

access_record* access_ring::reserve() noexcept {
    const std::uint64_t head = head_.load(std::memory_order_relaxed);
    if (head - tail_.load(std::memory_order_acquire) > mask_) {
        dropped_.add();
        return nullptr;
    }
    return &slots_[head & mask_];
}

void access_ring::commit() noexcept {
    head_.store(head_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
}

result<std::unique_ptr<access_log>> access_log::open(const std::string& path, log_line_format format, const app& routes,
                                                     std::size_t loops, std::size_t records_per_loop) {
    int fd = STDOUT_FILENO;
    const bool owns = path != "-";
    if (owns) {
        fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd < 0) {
            return std::error_code(errno, std::generic_category());
        }
    }
    return std::unique_ptr<access_log>(new access_log(fd, owns, format, routes, loops, records_per_loop));
}

access_log::access_log(int fd, bool owns_fd, log_line_format format, const app& routes, std::size_t loops,
                       std::size_t records_per_loop)
    : fd_(fd), owns_fd_(owns_fd), format_(format), routes_(routes) {
    for (std::size_t i = 0; i < loops; ++i) {
        rings_.push_back(std::make_unique<access_ring>(records_per_loop));
    }
    writer_ = std::thread([this] { run(); });
}

access_log::~access_log() {
    {
        const std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_one();
    writer_.join();
    flush();
    if (owns_fd_) {
        ::close(fd_);
    }
}

std::uint64_t access_log::dropped() const noexcept {
    std::uint64_t n = 0;
    for (const auto& r : rings_) {
        n += r->dropped();
    }
    return n;
}

void access_log::run() {
    std::string buffer;
    std::unique_lock lock(mutex_);
    while (!stopping_) {
        wake_.wait_for(lock, drain_period, [this] { return stopping_; });
        lock.unlock();
        write_pending(buffer);
        lock.lock();
    }
}

void access_log::flush() {
    std::string buffer;
    write_pending(buffer);
}

// Drains every ring, puts the lines of all loops in time order, and writes them. A write that fails (a full disk,
// a closed pipe) loses the lines, not the server's time.
std::size_t access_log::write_pending(std::string& buffer) {
    const std::lock_guard lock(write_mutex_);
    staging_.clear();
    order_.clear();
    for (auto& ring : rings_) {
        ring->drain([&](const access_record& r) {
            const std::size_t begin = staging_.size();
            format_line(staging_, r, format_, routes_);
            order_.push_back({r.unix_ns, begin, staging_.size()});
        });
    }
    std::stable_sort(order_.begin(), order_.end(), [](const line& a, const line& b) { return a.unix_ns < b.unix_ns; });
    buffer.clear();
    for (const line& l : order_) {
        buffer.append(staging_, l.begin, l.end - l.begin);
    }
    const std::size_t lines = order_.size();
    std::size_t done = 0;
    while (done < buffer.size()) {
        const ssize_t n = ::write(fd_, buffer.data() + done, buffer.size() - done);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        done += static_cast<std::size_t>(n);
    }
    written_.fetch_add(lines, std::memory_order_relaxed);
    if (buffer.capacity() > 1024 * 1024) {
        buffer = std::string(); // a burst's buffers are not kept
        staging_ = std::string();
        order_ = std::vector<line>();
    }
    return lines;
}

void access_log::format_line(std::string& out, const access_record& r, log_line_format format, const app& routes) {
    const std::time_t seconds = static_cast<std::time_t>(r.unix_ns / 1'000'000'000);
    std::tm utc{};
    ::gmtime_r(&seconds, &utc);
    char peer_buffer[INET6_ADDRSTRLEN];
    const std::string_view peer = peer_text(r, peer_buffer);
    const std::string_view method(r.method, r.method_length);
    const std::string_view target(r.target, r.target_length);
    const auto it = std::back_inserter(out);
    if (format == log_line_format::common) {
        static constexpr const char* months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                 "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
        fmt::format_to(it, "{} - - [{:02}/{}/{:04}:{:02}:{:02}:{:02} +0000] \"", peer, utc.tm_mday, months[utc.tm_mon],
                       utc.tm_year + 1900, utc.tm_hour, utc.tm_min, utc.tm_sec);
        append_escaped_clf(out, method);
        out += ' ';
        append_escaped_clf(out, target);
        if (r.target_cut) {
            out += "...";
        }
        fmt::format_to(it, " HTTP/{}.{}\" {} {}\n", r.version_major, r.version_minor, r.status, r.response_bytes);
        return;
    }
    const route_label route = label_of(routes, r.route);
    fmt::format_to(it, "{{\"time\":\"{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z\",\"remote\":\"{}\",\"method\":\"",
                   utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                   (r.unix_ns / 1'000'000) % 1000, peer);
    append_escaped_json(out, method);
    out += "\",\"target\":\"";
    append_escaped_json(out, target);
    if (r.target_cut) {
        out += "...";
    }
    out += "\",\"route\":\"";
    append_escaped_json(out, route.pattern);
    fmt::format_to(it,
                   "\",\"version\":\"{}.{}\",\"status\":{},\"bytes\":{},\"duration_ms\":{:.3f},\"queue_ms\":{:.3f},"
                   "\"app_ms\":{:.3f},\"downstream_ms\":{:.3f},\"wait_ms\":{:.3f},\"write_ms\":{:.3f},\"calls\":{}}}\n",
                   r.version_major, r.version_minor, r.status, r.response_bytes, ms(r.parts.total_ns()),
                   ms(r.parts.queue_ns), ms(r.parts.app_ns), ms(r.parts.downstream_ns), ms(r.parts.wait_ns),
                   ms(r.parts.write_ns), r.calls);
}

} // namespace hotpath
