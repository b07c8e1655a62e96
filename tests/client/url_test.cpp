// The client's URL splitter: a table of accepted and rejected URLs.
#include "client/url.hpp"
#include "core/error.hpp"

#include <gtest/gtest.h>

namespace hotpath::client_detail {
namespace {

struct good_case {
    const char* text;
    const char* host;
    std::uint16_t port;
    const char* host_field;
    const char* target;
};

TEST(url_test, accepts_absolute_http_urls) {
    const good_case cases[] = {
        {"http://127.0.0.1:5176/weatherForecast", "127.0.0.1", 5176, "127.0.0.1:5176", "/weatherForecast"},
        {"http://example.com", "example.com", 80, "example.com", "/"},
        {"HTTP://Example.COM/A?b=C", "example.com", 80, "Example.COM", "/A?b=C"},
        {"http://h:8080?x=1", "h", 8080, "h:8080", "/?x=1"},
        {"http://h:/p", "h", 80, "h", "/p"},
        {"http://h/p#frag", "h", 80, "h", "/p"},
        {"http://[::1]:9000/x", "::1", 9000, "[::1]:9000", "/x"},
        {"http://[::1]/", "::1", 80, "[::1]", "/"},
        {"http://a-b.c_d~e/%20", "a-b.c_d~e", 80, "a-b.c_d~e", "/%20"},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.text);
        const auto u = parse_url(c.text);
        ASSERT_TRUE(u.has_value());
        EXPECT_EQ(u->host, c.host);
        EXPECT_EQ(u->port, c.port);
        EXPECT_EQ(u->host_field, c.host_field);
        EXPECT_EQ(u->target, c.target);
    }
}

TEST(url_test, rejects_what_it_cannot_send) {
    const char* cases[] = {
        "",                     // empty
        "https://example.com/", // no TLS here
        "ftp://example.com/",   // another scheme
        "example.com/",         // relative
        "http://",              // no host
        "http:///path",         // empty host
        "http://user@host/",    // userinfo
        "http://host:0/",       // port 0
        "http://host:65536/",   // port too large
        "http://host:12a/",     // port not digits
        "http://host:123456/",  // too many digits
        "http://ho st/",        // space
        "http://host/a b",      // space in the path
        "http://host/\r\nX: y", // CR LF smuggled into the request line
        "http://[::1/",         // unclosed IP literal
        "http://[]/",           // empty IP literal
        "http://[::1]x/",       // junk after the literal
        "http://h\xc3\xa9/",    // non-ASCII
        "http://a,b/",          // not a reg-name byte
    };
    for (const char* text : cases) {
        SCOPED_TRACE(text);
        const auto u = parse_url(text);
        ASSERT_FALSE(u.has_value());
        EXPECT_EQ(u.error(), errc::invalid_url);
    }
}

} // namespace
} // namespace hotpath::client_detail
