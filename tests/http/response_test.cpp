// Response serialisation: status line, fixed fields, Content-Length, Connection, HEAD, header injection.
#include <hotpath/http/response.hpp>

#include <gtest/gtest.h>

namespace hotpath::http {
namespace {

constexpr std::string_view date = "Sun, 06 Nov 1994 08:49:37 GMT";

TEST(response_test, text_response) {
    response r;
    r.text("Hello, World!", "text/plain");
    std::string out;
    r.serialize(out, date, connection_field::none, false);
    EXPECT_EQ(out, "HTTP/1.1 200 OK\r\nServer: hotpath\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n"
                   "Content-Type: text/plain\r\nContent-Length: 13\r\n\r\nHello, World!");
}

TEST(response_test, head_keeps_length_without_body_and_close_is_said) {
    response r;
    r.text("abc");
    std::string out;
    r.serialize(out, date, connection_field::close, true);
    EXPECT_NE(out.find("Content-Length: 3\r\n"), std::string::npos);
    EXPECT_NE(out.find("Connection: close\r\n\r\n"), std::string::npos);
    EXPECT_EQ(out.substr(out.size() - 4), "\r\n\r\n");
}

TEST(response_test, no_content_statuses_have_no_length) {
    response r;
    r.status(status::no_content);
    std::string out;
    r.serialize(out, date, connection_field::keep_alive, false);
    EXPECT_EQ(out.find("Content-Length"), std::string::npos);
    EXPECT_NE(out.find("HTTP/1.1 204 No Content\r\n"), std::string::npos);
    EXPECT_NE(out.find("Connection: keep-alive\r\n"), std::string::npos);
}

TEST(response_test, fields_cannot_split_the_response) {
    response r;
    EXPECT_FALSE(r.header("X-Evil", "a\r\nSet-Cookie: x"));
    EXPECT_FALSE(r.header("Bad Name", "v"));
    EXPECT_FALSE(r.header("Content-Length", "5"));
    EXPECT_FALSE(r.header("Connection", "close"));
    EXPECT_TRUE(r.header("X-Ok", "v"));
    std::string out;
    r.serialize(out, date, connection_field::none, false);
    EXPECT_EQ(out.find("Evil"), std::string::npos);
    EXPECT_NE(out.find("X-Ok: v\r\n"), std::string::npos);
}

TEST(response_test, clear_resets_everything) {
    response r;
    r.redirect("https://x.invalid/");
    r.clear();
    std::string out;
    r.serialize(out, date, connection_field::none, false);
    EXPECT_NE(out.find("200 OK"), std::string::npos);
    EXPECT_EQ(out.find("Location"), std::string::npos);
    EXPECT_NE(out.find("Content-Length: 0"), std::string::npos);
}

} // namespace
} // namespace hotpath::http
