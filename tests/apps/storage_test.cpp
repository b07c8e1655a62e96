// Case 4's file store over real sockets and a real folder: round trips byte for byte, names that would leave the
// root refused, no truncated file under a final name whatever happens to the upload, one whole winner among
// concurrent uploads, and a 1 GB upload through a bounded amount of memory.
#include "apps/storage/files.hpp"
#include "support/raw_client.hpp"
#include "support/test_server.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace hotpath {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using test::raw_client;
using test::test_server;

struct temp_dir {
    fs::path path;
    explicit temp_dir(const std::string& name)
        : path(fs::path(::testing::TempDir()) / ("hotpath_storage_" + name + "_" + std::to_string(::getpid()))) {
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~temp_dir() { fs::remove_all(path); }
};

std::string random_bytes(std::size_t n, unsigned seed) {
    std::mt19937_64 gen(seed);
    std::string s(n, '\0');
    for (std::size_t i = 0; i < n; i += 8) {
        const std::uint64_t v = gen();
        std::memcpy(s.data() + i, &v, std::min<std::size_t>(8, n - i));
    }
    return s;
}

std::string read_file(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Every file under `root`, as paths relative to it.
std::vector<std::string> files_under(const fs::path& root) {
    std::vector<std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(root)) {
        if (e.is_regular_file()) {
            out.push_back(fs::relative(e.path(), root).string());
        }
    }
    std::sort(out.begin(), out.end());
    return out;
}

std::string put(std::string_view path, std::size_t length, std::string_view fields = "") {
    return "PUT " + std::string(path) + " HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string(length) + "\r\n" +
           std::string(fields) + "\r\n";
}

// Waits until `pred` holds, at most 3 s.
template <typename P>
bool eventually(P pred) {
    for (int i = 0; i < 300; ++i) {
        if (pred()) {
            return true;
        }
        std::this_thread::sleep_for(10ms);
    }
    return pred();
}

class storage_test : public ::testing::Test {
protected:
    explicit storage_test(std::uint64_t max = std::uint64_t{4} << 30) : dir_("t") {
        apps::file_store_options o;
        o.root = dir_.path / "data";
        o.max_file_bytes = max;
        apps::map_file_store(routes_, o);
        root_ = o.root;
    }
    temp_dir dir_;
    fs::path root_;
    app routes_;
};

TEST_F(storage_test, a_file_goes_up_comes_back_byte_for_byte_and_is_deleted) {
    test_server srv(routes_);
    const std::string body = random_bytes(5 * 1024 * 1024 + 3, 1);
    raw_client c(srv.port());
    ASSERT_TRUE(c.send(put("/files/photos/cat.png", body.size()) + body));
    const auto r = c.read_reply(20s);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 201) << r->body;
    EXPECT_EQ(r->body, R"({"container":"photos","name":"cat.png","bytes":5242883})");
    EXPECT_EQ(read_file(root_ / "photos" / "cat.png"), body); // the container was made
    c.send("GET /files/photos/cat.png HTTP/1.1\r\nHost: t\r\n\r\n");
    const auto got = c.read_reply(20s);
    ASSERT_TRUE(got);
    EXPECT_EQ(got->status, 200);
    EXPECT_EQ(got->field("content-length"), std::to_string(body.size()));
    EXPECT_EQ(got->field("content-type"), "application/octet-stream");
    EXPECT_TRUE(got->body == body);
    c.send("HEAD /files/photos/cat.png HTTP/1.1\r\nHost: t\r\n\r\n");
    const auto head = c.read_reply(5s, true);
    ASSERT_TRUE(head);
    EXPECT_EQ(head->field("content-length"), std::to_string(body.size()));
    c.send("DELETE /files/photos/cat.png HTTP/1.1\r\nHost: t\r\n\r\n");
    const auto del = c.read_reply();
    ASSERT_TRUE(del);
    EXPECT_EQ(del->status, 204);
    for (const char* method : {"GET", "DELETE"}) {
        c.send(std::string(method) + " /files/photos/cat.png HTTP/1.1\r\nHost: t\r\n\r\n");
        const auto gone = c.read_reply();
        ASSERT_TRUE(gone);
        EXPECT_EQ(gone->status, 404) << method;
    }
    // An empty file is a file.
    c.send(put("/files/photos/empty", 0));
    const auto empty = c.read_reply();
    ASSERT_TRUE(empty);
    EXPECT_EQ(empty->status, 201);
    c.send("GET /files/photos/empty HTTP/1.1\r\nHost: t\r\n\r\n");
    const auto zero = c.read_reply();
    ASSERT_TRUE(zero);
    EXPECT_EQ(zero->field("content-length"), "0");
}

TEST_F(storage_test, names_that_could_leave_the_root_are_400) {
    test_server srv(routes_);
    const fs::path outside = dir_.path / "outside";
    for (const std::string& target : std::vector<std::string>{
             "/files/../x", "/files/%2e%2e/x", "/files/%2E%2e/x", "/files/c/..", "/files/c/%2e%2E", "/files/c/.hidden",
             "/files/c/a%2Fb", "/files/%2Fetc/passwd", "/files/c/%2Fetc%2Fpasswd", "/files/c/a%00b", "/files/c/a%5cb",
             "/files/c/a%zz", "/files/c/a%2", "/files/c/" + std::string(256, 'n'), "/files/c/a%20b", "/files/c/%2e",
             "/files/%2e%2e/outside"}) {
        for (const char* method : {"PUT", "GET", "DELETE"}) {
            raw_client c(srv.port());
            c.send(std::string(method) + " " + target + " HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\n\r\ndata");
            const auto r = c.read_reply();
            ASSERT_TRUE(r) << method << " " << target;
            EXPECT_TRUE(r->status == 400 || r->status == 404) << method << " " << target << ": " << r->status;
            if (target.find("%2e%2e") != std::string::npos || target.find("%2F") != std::string::npos) {
                EXPECT_EQ(r->status, 400) << method << " " << target;
            }
        }
    }
    EXPECT_TRUE(files_under(dir_.path).empty());
    EXPECT_FALSE(fs::exists(outside));
    // At the edge: 255 characters, dots and dashes inside.
    raw_client c(srv.port());
    const std::string longest(255, 'n');
    c.send(put("/files/c-1_x/" + longest, 1) + "z");
    const auto ok = c.read_reply();
    ASSERT_TRUE(ok);
    EXPECT_EQ(ok->status, 201);
    c.send(put("/files/c-1_x/a.b..c", 1) + "z");
    const auto dots = c.read_reply();
    ASSERT_TRUE(dots);
    EXPECT_EQ(dots->status, 201);
}

TEST_F(storage_test, an_interrupted_upload_leaves_no_file_behind) {
    test_server srv(routes_);
    {
        raw_client c(srv.port());
        c.send(put("/files/c/old", 3) + "old");
        ASSERT_EQ(c.read_reply()->status, 201);
    }
    {
        raw_client p(srv.port());
        ASSERT_TRUE(p.connected());
        ASSERT_TRUE(p.send(put("/files/c/new", 10'000'000) + random_bytes(1'000'000, 2)));
        std::this_thread::sleep_for(100ms);
        p.reset();
    }
    {
        raw_client p(srv.port()); // and one that replaces an existing file, cut off
        ASSERT_TRUE(p.send(put("/files/c/old", 10'000'000) + random_bytes(2'000'000, 3)));
        std::this_thread::sleep_for(100ms);
        p.reset();
    }
    EXPECT_TRUE(eventually([&] { return files_under(root_) == std::vector<std::string>{"c/old"}; }))
        << files_under(root_).size();
    EXPECT_EQ(read_file(root_ / "c" / "old"), "old");
}

class small_storage_test : public storage_test {
protected:
    small_storage_test() : storage_test(100'000) {}
};

TEST_F(small_storage_test, files_over_the_limit_are_413_and_leave_nothing) {
    test_server srv(routes_);
    {
        raw_client c(srv.port());
        c.send(put("/files/c/big", 100'001));
        const auto r = c.read_reply();
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 413);
    }
    {
        raw_client c(srv.port());
        const std::string chunk(60'000, 'x');
        c.send("PUT /files/c/big HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n");
        c.send("ea60\r\n" + chunk + "\r\nea60\r\n" + chunk + "\r\n0\r\n\r\n");
        const auto r = c.read_reply();
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 413);
    }
    EXPECT_TRUE(eventually([&] { return files_under(root_).empty(); }));
    raw_client c(srv.port());
    c.send(put("/files/c/fits", 100'000) + std::string(100'000, 'y'));
    const auto r = c.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 201);
}

TEST_F(storage_test, concurrent_uploads_to_one_name_end_with_one_whole_file) {
    test_server srv(routes_, http::limits{}, 2);
    constexpr int uploads = 6;
    std::vector<std::string> bodies;
    for (int i = 0; i < uploads; ++i) {
        bodies.push_back(random_bytes(2'000'000 + static_cast<std::size_t>(i) * 1000, 10 + i));
    }
    std::vector<std::thread> threads;
    std::atomic<int> created{0};
    for (int i = 0; i < uploads; ++i) {
        threads.emplace_back([&, i] {
            raw_client p(srv.port());
            const std::string& b = bodies[static_cast<std::size_t>(i)];
            // In slices, so that the uploads interleave.
            p.send(put("/files/shared/one", b.size(), "Connection: close\r\n"));
            for (std::size_t at = 0; at < b.size(); at += 100'000) {
                p.send(std::string_view(b).substr(at, 100'000));
                std::this_thread::sleep_for(1ms);
            }
            const std::string reply = p.read_until_close(20s);
            if (reply.starts_with("HTTP/1.1 201")) {
                ++created;
            }
        });
    }
    for (auto& t : threads) {
        t.join();
    }
    EXPECT_EQ(created.load(), uploads);
    EXPECT_TRUE(eventually([&] { return files_under(root_) == std::vector<std::string>{"shared/one"}; }));
    const std::string stored = read_file(root_ / "shared" / "one");
    EXPECT_NE(std::find(bodies.begin(), bodies.end(), stored), bodies.end()) << "a mix, or a part: " << stored.size();
}

// VmHWM, the peak resident set, in kB; reset first by writing 5 to /proc/self/clear_refs.
long peak_rss_kb() {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("VmHWM:", 0) == 0) {
            return std::stol(line.substr(6));
        }
    }
    return -1;
}
long rss_kb() {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("VmRSS:", 0) == 0) {
            return std::stol(line.substr(6));
        }
    }
    return -1;
}

TEST_F(storage_test, a_1_gb_upload_goes_through_64_mb_of_memory_at_most) {
    test_server srv(routes_);
    constexpr std::size_t size = 1'000'000'000;
    const std::string block = random_bytes(1 << 20, 4);
    { std::ofstream("/proc/self/clear_refs") << "5"; }
    const long before = rss_kb();
    raw_client p(srv.port());
    ASSERT_TRUE(p.send(put("/files/big/one", size, "Connection: close\r\n")));
    for (std::size_t sent = 0; sent < size; sent += block.size()) {
        ASSERT_TRUE(p.send(std::string_view(block).substr(0, std::min(block.size(), size - sent))));
    }
    const std::string reply = p.read_until_close(60s);
    EXPECT_TRUE(reply.starts_with("HTTP/1.1 201")) << reply.substr(0, 200);
    const long peak = peak_rss_kb();
    EXPECT_LT(peak - before, 64 * 1024) << "peak " << peak << " kB, at the start " << before << " kB";
    EXPECT_EQ(fs::file_size(root_ / "big" / "one"), size);
}

} // namespace
} // namespace hotpath
