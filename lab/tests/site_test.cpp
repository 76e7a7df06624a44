// /site/...: crawls the synthetic site the way a correct crawler would and checks that it finds
// exactly the URLs lab/README.md lists. The crawler here is deliberately plain (breadth first, one
// request at a time); stage 06's crawler must find the same set.
#include <gtest/gtest.h>

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "lab/labserver.hpp"
#include "lab/tests/test_client.hpp"

namespace sixways::lab {
namespace {

using namespace std::chrono_literals;

// Removes "." and ".." segments from a path (RFC 3986 section 5.2.4, for paths that start with /).
std::string remove_dot_segments(const std::string& path) {
    std::vector<std::string> segments;
    std::size_t start = 1;
    bool trailing_slash = false;
    while (start <= path.size()) {
        std::size_t end = path.find('/', start);
        if (end == std::string::npos) end = path.size();
        const std::string segment = path.substr(start, end - start);
        const bool last = end == path.size();
        if (segment == "..") {
            if (!segments.empty()) segments.pop_back();
            trailing_slash = last;
        } else if (segment == ".") {
            trailing_slash = last;
        } else if (!last || !segment.empty()) {
            segments.push_back(segment);
            trailing_slash = false;
        } else {
            trailing_slash = true;  // the path ends with '/'
        }
        start = end + 1;
    }
    std::string result;
    for (const std::string& segment : segments) result += "/" + segment;
    if (trailing_slash || result.empty()) result += "/";
    return result;
}

// Resolves a link found on the page at `base` (a target such as "/site/blog/?page=2") to a target on
// `own_host`, without its fragment; nullopt for other hosts and other schemes.
std::optional<std::string> resolve(const std::string& base, std::string link,
                                   const std::string& own_host) {
    link = link.substr(0, link.find('#'));
    if (link.starts_with("http://")) {
        const std::size_t slash = link.find('/', 7);
        if (link.substr(7, slash == std::string::npos ? std::string::npos : slash - 7) != own_host) {
            return std::nullopt;
        }
        return slash == std::string::npos ? "/" : link.substr(slash);
    }
    const std::size_t colon = link.find(':');
    if (colon != std::string::npos && link.find_first_of("/?") > colon) return std::nullopt;  // mailto:
    const std::string base_path = base.substr(0, base.find('?'));
    if (link.empty()) return base;
    if (link.front() == '?') return base_path + link;
    std::string path = link.front() == '/' ? link : base_path.substr(0, base_path.rfind('/') + 1) + link;
    const std::size_t query = path.find('?');
    const std::string query_part = query == std::string::npos ? "" : path.substr(query);
    return remove_dot_segments(path.substr(0, query)) + query_part;
}

TEST(SiteCrawl, ResolvesLinksLikeABrowser) {
    const std::string host = "127.0.0.1:80";
    EXPECT_EQ(resolve("/site/", "blog/", host), "/site/blog/");
    EXPECT_EQ(resolve("/site/blog/?page=2", "post-3", host), "/site/blog/post-3");
    EXPECT_EQ(resolve("/site/blog/", "?page=2", host), "/site/blog/?page=2");
    EXPECT_EQ(resolve("/site/docs/", "../docs/", host), "/site/docs/");
    EXPECT_EQ(resolve("/site/docs/intro", "../", host), "/site/");
    EXPECT_EQ(resolve("/site/contact", "./about", host), "/site/about");
    EXPECT_EQ(resolve("/site/about", "#top", host), "/site/about");
    EXPECT_EQ(resolve("/site/", "http://127.0.0.1:80/site/x#y", host), "/site/x");
    EXPECT_EQ(resolve("/site/", "http://elsewhere.example/", host), std::nullopt);
    EXPECT_EQ(resolve("/site/", "mailto:lab@example.com", host), std::nullopt);
    EXPECT_EQ(resolve("/site/", "javascript:void(0)", host), std::nullopt);
}

TEST(SiteCrawl, ACorrectCrawlerFindsExactlyTheDocumentedPages) {
    LabServerOptions options;
    options.hosts = {"127.0.0.1"};
    options.port = 0;
    options.delay = 10s;  // the site is never delayed by the server's delay
    LabServer server(options);
    server.start();
    const std::string own_host = "127.0.0.1:" + std::to_string(server.port());

    const std::regex href(R"re(href=["']?([^\s"'<>]+))re", std::regex::icase);
    std::map<std::string, int> found;  // target -> status
    std::deque<std::string> queue = {"/site/"};
    std::set<std::string> seen = {"/site/"};
    while (!queue.empty() && found.size() < 100) {
        const std::string target = queue.front();
        queue.pop_front();
        const test::Reply reply = test::fetch(server.port(), target);
        ASSERT_NE(reply.status, 0) << target << ": " << reply.error;
        found[target] = reply.status;

        std::vector<std::string> links;
        if (reply.status == 301 || reply.status == 302) links.push_back(reply.header("location"));
        if (reply.status == 200 && reply.header("content-type").starts_with("text/html")) {
            for (std::sregex_iterator it(reply.body.begin(), reply.body.end(), href), end; it != end;
                 ++it) {
                links.push_back((*it)[1]);
            }
        }
        for (const std::string& link : links) {
            const std::optional<std::string> next = resolve(target, link, own_host);
            if (next && seen.insert(*next).second) queue.push_back(*next);
        }
    }

    // The list in lab/README.md, "The synthetic site".
    const std::map<std::string, int> expected = {
        {"/site/", 200},
        {"/site/about", 200},
        {"/site/contact", 200},
        {"/site/missing", 404},
        {"/site/blog/", 200},
        {"/site/blog/?page=2", 200},
        {"/site/blog/post-1", 200},
        {"/site/blog/post-2", 200},
        {"/site/blog/post-3", 200},
        {"/site/blog/post-9", 404},
        {"/site/docs/", 200},
        {"/site/docs/intro", 200},
        {"/site/docs/chapter-1", 200},
        {"/site/docs/chapter-2", 200},
        {"/site/docs/chapter-3", 200},
        {"/site/docs/appendix", 200},
        {"/site/files/", 200},
        {"/site/files/notes.txt", 200},
        {"/site/files/data.json", 200},
        {"/site/old-home", 301},
        {"/site/older-home", 302},
        {"/site/home", 200},
        {"/site/alias-1", 301},
        {"/site/alias-2", 302},
        {"/site/shared", 200},
        {"/site/loop-a", 302},
        {"/site/loop-b", 302},
        {"/site/moved-chapter", 301},
        {"/site/offsite", 302},
        {"/site/slow/1", 200},
        {"/site/slow/2", 200},
        {"/site/slow/3", 200},
    };
    EXPECT_EQ(found, expected);
    EXPECT_EQ(found.size(), 32u);
    // Every fetch was one request, and nothing was asked twice.
    EXPECT_EQ(server.stats().requests, 32u);
    EXPECT_EQ(server.stats().requests_by_class.at("site"), 32u);
}

TEST(Site, UsesTheHostTheClientAskedForInAbsoluteLinksAndRedirects) {
    LabServerOptions options;
    options.hosts = {"127.0.0.1"};
    options.port = 0;
    LabServer server(options);
    server.start();
    test::Client client("127.0.0.1", server.port());
    client.send(test::request_text("/site/moved-chapter", "GET", "lab.test:1234"));
    const test::Reply reply = test::parse_reply(client.read_to_end().bytes);
    EXPECT_EQ(reply.status, 301) << reply.error;
    EXPECT_EQ(reply.header("location"), "http://lab.test:1234/site/docs/chapter-3");
}

TEST(Site, ServesTextAndJsonPagesWithTheirOwnContentTypes) {
    LabServerOptions options;
    options.hosts = {"127.0.0.1"};
    options.port = 0;
    LabServer server(options);
    server.start();
    const test::Reply text = test::fetch(server.port(), "/site/files/notes.txt");
    EXPECT_EQ(text.header("content-type"), "text/plain; charset=utf-8");
    EXPECT_NE(text.body.find("href="), std::string::npos);  // link-shaped text, not a link
    const test::Reply json = test::fetch(server.port(), "/site/files/data.json");
    EXPECT_EQ(json.header("content-type"), "application/json");
    EXPECT_TRUE(json.body.starts_with("{\"path\": \"/site/files/data.json\""));
}

TEST(Site, AnswersASlowPageNoSoonerThan300Milliseconds) {
    LabServerOptions options;
    options.hosts = {"127.0.0.1"};
    options.port = 0;
    options.delay = 0ms;
    LabServer server(options);
    server.start();
    const auto start = std::chrono::steady_clock::now();
    const test::Reply reply = test::fetch(server.port(), "/site/slow/2");
    EXPECT_EQ(reply.status, 200) << reply.error;
    EXPECT_GE(std::chrono::steady_clock::now() - start, 300ms);
}

}  // namespace
}  // namespace sixways::lab
