// lab::report_html on hand-written result documents: one self-contained file, uPlot inside, no URL, every text from
// the documents escaped, and the embedded data parsing back to the documents given.
#include <hotpath/lab/html_report.hpp>

#include "lab/lab_documents.hpp"

#include "support/result_assert.hpp"
#include <boost/json.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <unistd.h>

namespace hotpath {
namespace {

std::size_t count(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
        ++n;
    }
    return n;
}

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

// The text of the page's data block, as it stands in the file.
std::string data_block(const std::string& page) {
    const std::string open = R"(<script type="application/json" id="lab-data">)";
    const std::size_t from = page.find(open);
    if (from == std::string::npos) {
        return {};
    }
    const std::size_t start = from + open.size();
    return page.substr(start, page.find("</script>", start) - start);
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(html_report_test, is_one_page_with_uplot_and_the_page_script) {
    const std::string page = lab::report_html(test::lab_documents());
    EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
    EXPECT_EQ(count(page, "</html>"), 1u);
    EXPECT_NE(page.find("var uPlot="), std::string::npos) << "uPlot's script is inline";
    EXPECT_NE(page.find(".uplot"), std::string::npos) << "uPlot's CSS is inline";
    EXPECT_NE(page.find("prefers-color-scheme: dark"), std::string::npos);
    EXPECT_NE(page.find("data-rendered"), std::string::npos);
    for (const char* marker : {"@TITLE@", "@UPLOT_CSS@", "@REPORT_CSS@", "@DATA@", "@UPLOT_JS@", "@REPORT_JS@"}) {
        EXPECT_EQ(page.find(marker), std::string::npos) << marker << " left unfilled";
    }
}

TEST(html_report_test, names_no_url_at_all) {
    const std::string page = lower(lab::report_html(test::lab_documents()));
    // The documents hold their services' http:// URLs; the file must not, nor any reference to fetch.
    EXPECT_EQ(page.find("http://"), std::string::npos);
    EXPECT_EQ(page.find("https://"), std::string::npos);
    EXPECT_EQ(page.find("src="), std::string::npos);
    EXPECT_EQ(page.find("<link"), std::string::npos);
    EXPECT_EQ(page.find("@import"), std::string::npos);
}

TEST(html_report_test, text_from_the_documents_cannot_end_a_block_or_open_markup) {
    const std::string page = lower(lab::report_html(test::lab_documents()));
    // Three blocks: the data, uPlot, the page's script; a name holding </script> must not have added one.
    EXPECT_EQ(count(page, "<script"), 3u);
    EXPECT_EQ(count(page, "</script>"), 3u);
    EXPECT_EQ(count(page, "<!--"), 1u) << "only the page's own comment";
    EXPECT_EQ(page.find("alert(1)</script>"), std::string::npos);
    // The title: the case names, HTML-escaped.
    EXPECT_NE(page.find("<title>hotpath lab: fan&lt;/script&gt;out, redirect</title>"), std::string::npos);
}

TEST(html_report_test, data_block_parses_back_to_the_documents) {
    const auto docs = test::lab_documents();
    const std::string page = lab::report_html(docs);
    const std::string block = data_block(page);
    ASSERT_FALSE(block.empty());
    EXPECT_EQ(block.find('<'), std::string::npos);
    boost::system::error_code ec;
    const auto parsed = boost::json::parse(block, ec);
    ASSERT_FALSE(ec) << ec.message();
    ASSERT_TRUE(parsed.is_array());
    // Through the same reader as the documents' own text: numbers compare as that reader rounds them.
    EXPECT_EQ(parsed, boost::json::parse(boost::json::serialize(boost::json::array(docs.begin(), docs.end()))));
    EXPECT_EQ(parsed.at(0).at("variants").at(0).at("name").as_string(), "</script><script>alert(1)</script>");
}

TEST(html_report_test, no_documents_is_still_a_page) {
    const std::string page = lab::report_html({});
    EXPECT_EQ(data_block(page), "[]");
    EXPECT_NE(page.find("<title>hotpath lab</title>"), std::string::npos);
}

TEST(html_report_test, writes_the_page_from_result_files) {
    const std::string dir = ::testing::TempDir() + "hotpath_html_report_" + std::to_string(::getpid());
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const auto docs = test::lab_documents();
    std::vector<std::string> paths;
    for (std::size_t i = 0; i < docs.size(); ++i) {
        paths.push_back(dir + "/" + std::to_string(i) + ".json");
        std::ofstream(paths.back(), std::ios::binary) << boost::json::serialize(docs[i]) << "\n";
    }
    ASSERT_TRUE(test::ok(lab::write_report_html(paths, dir + "/out/report.html")));
    std::vector<boost::json::value> read_back;
    for (const auto& d : docs) {
        read_back.push_back(boost::json::parse(boost::json::serialize(d)));
    }
    EXPECT_EQ(read_file(dir + "/out/report.html"), lab::report_html(read_back));

    paths.push_back(dir + "/missing.json");
    std::string why = test::failure_of(lab::write_report_html(paths, dir + "/report.html"));
    EXPECT_NE(why.find("missing.json"), std::string::npos) << why;
    paths.back() = dir + "/bad.json";
    std::ofstream(paths.back()) << "{\"case\": ";
    why = test::failure_of(lab::write_report_html(paths, dir + "/report.html"));
    EXPECT_NE(why.find("bad.json"), std::string::npos) << why;
    EXPECT_FALSE(lab::write_report_html(docs, dir + "/0.json/report.html").has_value())
        << "a file where the folder goes";
    std::filesystem::remove_all(dir);
}

} // namespace
} // namespace hotpath
