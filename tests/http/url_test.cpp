// The URL type: a table of accepted URLs with their parts, and one of refused ones with their messages.
#include <hotpath/http/url.hpp>

#include <gtest/gtest.h>

namespace hotpath::http {
namespace {

struct good_case {
    const char* text;
    scheme sch;
    const char* host;
    std::uint16_t port;
    const char* authority;
    const char* target;
    const char* shown; // url::text()
};

TEST(url_test, accepts_absolute_http_and_https_urls) {
    const good_case cases[] = {
        {"http://127.0.0.1:5176/weatherForecast", scheme::http, "127.0.0.1", 5176, "127.0.0.1:5176", "/weatherForecast",
         "http://127.0.0.1:5176/weatherForecast"},
        {"http://example.com", scheme::http, "example.com", 80, "example.com", "/", "http://example.com/"},
        {"HTTP://Example.COM/A?b=C", scheme::http, "example.com", 80, "example.com", "/A?b=C",
         "http://example.com/A?b=C"},
        {"http://h:8080?x=1", scheme::http, "h", 8080, "h:8080", "/?x=1", "http://h:8080/?x=1"},
        {"http://h:/p", scheme::http, "h", 80, "h", "/p", "http://h/p"},
        {"http://h:80/p", scheme::http, "h", 80, "h", "/p", "http://h/p"},
        {"http://h/p#frag", scheme::http, "h", 80, "h", "/p", "http://h/p"},
        {"http://h#top", scheme::http, "h", 80, "h", "/", "http://h/"},
        {"http://h/x?q=1#frag", scheme::http, "h", 80, "h", "/x?q=1", "http://h/x?q=1"},
        {"http://[::1]:9000/x", scheme::http, "::1", 9000, "[::1]:9000", "/x", "http://[::1]:9000/x"},
        {"http://[::1]/", scheme::http, "::1", 80, "[::1]", "/", "http://[::1]/"},
        {"http://[fe80::1]", scheme::http, "fe80::1", 80, "[fe80::1]", "/", "http://[fe80::1]/"},
        {"http://a-b.c_d~e/%20", scheme::http, "a-b.c_d~e", 80, "a-b.c_d~e", "/%20", "http://a-b.c_d~e/%20"},
        {"https://example.com/x", scheme::https, "example.com", 443, "example.com", "/x", "https://example.com/x"},
        {"HTTPS://h:8443", scheme::https, "h", 8443, "h:8443", "/", "https://h:8443/"},
        {"https://h:443/", scheme::https, "h", 443, "h", "/", "https://h/"},
        {"https://h:80/", scheme::https, "h", 80, "h:80", "/", "https://h:80/"},
        {"http://h:443/", scheme::http, "h", 443, "h:443", "/", "http://h:443/"},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.text);
        const auto u = parse_url(c.text);
        ASSERT_TRUE(u.has_value()) << u.error().message;
        EXPECT_EQ(u->scheme, c.sch);
        EXPECT_EQ(u->host, c.host);
        EXPECT_EQ(u->port, c.port);
        EXPECT_EQ(u->authority(), c.authority);
        EXPECT_EQ(u->target, c.target);
        EXPECT_EQ(u->text(), c.shown);
        EXPECT_EQ(u->tls(), c.sch == scheme::https);
        // What text() writes reads back as the same URL.
        const auto again = parse_url(u->text());
        ASSERT_TRUE(again.has_value());
        EXPECT_EQ(*again, *u);
    }
}

struct bad_case {
    const char* text;
    const char* message; // a part of the one-line message
};

TEST(url_test, refuses_what_cannot_be_sent_and_says_why) {
    const bad_case cases[] = {
        {"", "not an absolute URL"},
        {"ftp://example.com/", "scheme 'ftp' is not http or https"},
        {"example.com/", "must start with http:// or https://"},
        {"http://", "no host"},
        {"http:///path", "no host"},
        {"http://:8080/", "no host"},
        {"http://user@host/", "user information"},
        {"http://host:0/", "bad port in the URL: '0'"},
        {"http://host:65536/", "bad port"},
        {"http://host:12a/", "bad port"},
        {"http://host:123456/", "bad port"},
        {"http://ho st/", "percent-encode"},
        {"http://host/a b", "percent-encode"},
        {"http://host/\r\nX: y", "percent-encode"}, // CR LF smuggled into the request line
        {"http://[::1/", "bad IPv6 address"},
        {"http://[]/", "bad IPv6 address"},
        {"http://[::1]x/", "bad IPv6 address"},
        {"http://[::g]/", "bad IPv6 address"},
        {"http://[1]/", "bad IPv6 address"},
        {"http://[1.2.3.4]/", "bad IPv6 address"},
        {"http://::1:8080/", "goes in brackets"},
        {"http://h\xc3\xa9/", "non-ASCII"},
        {"http://a,b/", "bad host in the URL: 'a,b'"},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.text);
        const auto u = parse_url(c.text);
        ASSERT_FALSE(u.has_value());
        EXPECT_EQ(u.error().code, errc::invalid_url);
        EXPECT_NE(u.error().message.find(c.message), std::string::npos) << u.error().message;
        EXPECT_EQ(u.error().message.find('\n'), std::string::npos);
    }
}

} // namespace
} // namespace hotpath::http
