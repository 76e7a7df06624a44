// The parts of the lab server that need no socket: the request parser and the answers.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lab/request.hpp"
#include "lab/responses.hpp"
#include "lab/site.hpp"
#include "lab/tests/test_client.hpp"

namespace sixways::lab {
namespace {

using Status = RequestParser::Status;

TEST(RequestParser, ReadsMethodTargetAndHostFromACompleteHead) {
    RequestParser parser;
    EXPECT_EQ(parser.feed("GET /a/b?x=1 HTTP/1.1\r\nHost: example.com:8080\r\nAccept: */*\r\n\r\n"),
              Status::complete);
    EXPECT_EQ(parser.head().method, "GET");
    EXPECT_EQ(parser.head().target, "/a/b?x=1");
    EXPECT_EQ(parser.head().host, "example.com:8080");
}

TEST(RequestParser, GivesTheSameResultWhenTheHeadArrivesOneByteAtATime) {
    const std::string head = "HEAD /x HTTP/1.0\r\nhost:  h \r\n\r\n";
    RequestParser parser;
    for (std::size_t i = 0; i + 1 < head.size(); ++i) {
        ASSERT_EQ(parser.feed(head.substr(i, 1)), Status::need_more) << "after byte " << i;
    }
    EXPECT_EQ(parser.feed(head.substr(head.size() - 1)), Status::complete);
    EXPECT_EQ(parser.head().method, "HEAD");
    EXPECT_EQ(parser.head().target, "/x");
    EXPECT_EQ(parser.head().host, "h");
}

TEST(RequestParser, AcceptsLinesEndedByALoneLineFeed) {
    RequestParser parser;
    EXPECT_EQ(parser.feed("GET / HTTP/1.1\nHost: h\n\n"), Status::complete);
    EXPECT_EQ(parser.head().target, "/");
}

TEST(RequestParser, WaitsForTheBlankLineThatEndsTheHead) {
    RequestParser parser;
    EXPECT_EQ(parser.feed("GET / HTTP/1.1\r\nHost: h\r\n"), Status::need_more);
    EXPECT_EQ(parser.feed("\r"), Status::need_more);
    EXPECT_EQ(parser.feed("\n"), Status::complete);
}

TEST(RequestParser, IgnoresBytesAfterTheHead) {
    RequestParser parser;
    EXPECT_EQ(parser.feed("GET /one HTTP/1.1\r\nHost: h\r\n\r\nGET /two HTTP/1.1\r\n\r\n"),
              Status::complete);
    EXPECT_EQ(parser.head().target, "/one");
    EXPECT_EQ(parser.feed("more"), Status::complete);
}

TEST(RequestParser, AnswersAGarbageRequestLineWith400WithoutWaitingForTheRestOfTheHead) {
    RequestParser parser;
    EXPECT_EQ(parser.feed("hello there\r\n"), Status::invalid);
    EXPECT_EQ(parser.error_status(), 400);
    EXPECT_FALSE(parser.error().empty());
}

TEST(RequestParser, Rejects400RequestLinesThatAreNotMethodTargetVersion) {
    for (const char* line : {"GET /\r\n", "GET  / HTTP/1.1\r\n", "GET h/ HTTP/1.1\r\n",
                             "G(T / HTTP/1.1\r\n", "GET / HTTP/1.1 extra\r\n", "GET / http/1.1\r\n",
                             "GET http:/// HTTP/1.1\r\n", "GET ftp://h/ HTTP/1.1\r\n", "\r\n"}) {
        RequestParser parser;
        EXPECT_EQ(parser.feed(line), Status::invalid) << line;
        EXPECT_EQ(parser.error_status(), 400) << line;
    }
}

TEST(RequestParser, AnswersOtherMethodsWith405) {
    RequestParser parser;
    EXPECT_EQ(parser.feed("POST /x HTTP/1.1\r\n"), Status::invalid);
    EXPECT_EQ(parser.error_status(), 405);
}

TEST(RequestParser, AnswersOtherHttpVersionsWith505) {
    RequestParser parser;
    EXPECT_EQ(parser.feed("GET / HTTP/2.0\r\n"), Status::invalid);
    EXPECT_EQ(parser.error_status(), 505);
}

TEST(RequestParser, RejectsMalformedHeaderLinesWith400) {
    for (const char* head : {"GET / HTTP/1.1\r\nHost: h\r\nNo colon here\r\n\r\n",
                             "GET / HTTP/1.1\r\nHost: h\r\nA: b\r\n folded\r\n\r\n",
                             "GET / HTTP/1.1\r\nHost: h\r\nBad Name: x\r\n\r\n",
                             "GET / HTTP/1.1\r\nHost: h\r\nA: b\x01\r\n\r\n",
                             "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"}) {
        RequestParser parser;
        EXPECT_EQ(parser.feed(head), Status::invalid) << head;
        EXPECT_EQ(parser.error_status(), 400) << head;
    }
}

// RFC 9112 section 3.2.2: a server must accept a target in absolute form (as a client sends it to a
// proxy); its authority then stands for the Host header.
TEST(RequestParser, AcceptsAnAbsoluteFormTargetAndTakesTheHostFromIt) {
    const std::vector<std::vector<std::string>> cases = {
        {"GET http://127.0.0.1:8080/a/b?x=1 HTTP/1.1", "/a/b?x=1", "127.0.0.1:8080"},
        {"GET HTTP://lab.test HTTP/1.1", "/", "lab.test"},
        {"HEAD http://[::1]:80?q HTTP/1.1", "/?q", "[::1]:80"}};
    for (const std::vector<std::string>& one : cases) {
        RequestParser parser;
        EXPECT_EQ(parser.feed(one[0] + "\r\nHost: other.test\r\n\r\n"), Status::complete) << one[0];
        EXPECT_EQ(parser.head().target, one[1]) << one[0];
        EXPECT_EQ(parser.head().host, one[2]) << one[0];
    }
}

// RFC 9112 section 3.2: an HTTP/1.1 request without Host is answered 400; HTTP/1.0 had no Host.
TEST(RequestParser, AnswersAnHttp11RequestWithoutHostWith400) {
    RequestParser parser;
    EXPECT_EQ(parser.feed("GET / HTTP/1.1\r\nAccept: */*\r\n\r\n"), Status::invalid);
    EXPECT_EQ(parser.error_status(), 400);
    EXPECT_EQ(parser.error(), "an HTTP/1.1 request must carry a Host header");
}

TEST(RequestParser, AcceptsAnHttp10RequestWithoutHost) {
    RequestParser parser;
    EXPECT_EQ(parser.feed("GET /old HTTP/1.0\r\n\r\n"), Status::complete);
    EXPECT_EQ(parser.head().target, "/old");
    EXPECT_EQ(parser.head().host, "");
}

TEST(RequestParser, AnswersAHeadOver16KiBWith431EvenWhenItArrivesInPieces) {
    RequestParser parser;
    ASSERT_EQ(parser.feed("GET / HTTP/1.1\r\n"), Status::need_more);
    const std::string header = "X-Filler: " + std::string(1000, 'x') + "\r\n";
    Status status = Status::need_more;
    for (int i = 0; i < 20 && status == Status::need_more; ++i) status = parser.feed(header);
    EXPECT_EQ(status, Status::invalid);
    EXPECT_EQ(parser.error_status(), 431);
}

TEST(RequestParser, AcceptsAHeadOfExactlyTheLimit) {
    std::string head = "GET / HTTP/1.1\r\nHost: h\r\nX: ";
    head += std::string(RequestParser::max_head_bytes - head.size() - 4, 'y');
    head += "\r\n\r\n";
    ASSERT_EQ(head.size(), RequestParser::max_head_bytes);
    RequestParser parser;
    EXPECT_EQ(parser.feed(head), Status::complete);
}

TEST(Answers, ClassifyTargetsByTheirFirstSegment) {
    EXPECT_STREQ(request_class("/"), "plain");
    EXPECT_STREQ(request_class("/a/b?x=1"), "plain");
    EXPECT_STREQ(request_class("/delay/10"), "delay");
    EXPECT_STREQ(request_class("/bytes/10?x"), "bytes");
    EXPECT_STREQ(request_class("/chunked/1"), "chunked");
    EXPECT_STREQ(request_class("/redirect/2"), "redirect");
    EXPECT_STREQ(request_class("/status/404"), "status");
    EXPECT_STREQ(request_class("/fault/reset"), "fault");
    EXPECT_STREQ(request_class("/site/"), "site");
    EXPECT_STREQ(request_class("/stats"), "stats");
    EXPECT_STREQ(request_class("/bytes"), "plain");  // no argument: not the family
}

TEST(Answers, FillerTextIsOneRepeated64ByteLine) {
    const std::string_view line = filler_text(0, 64);
    ASSERT_EQ(line.size(), 64u);
    EXPECT_EQ(line.back(), '\n');
    const std::string_view slice = filler_text(64 * 1000 + 10, 200);
    ASSERT_EQ(slice.size(), 200u);
    for (std::size_t i = 0; i < slice.size(); ++i) ASSERT_EQ(slice[i], line[(10 + i) % 64]) << i;
    EXPECT_GE(filler_text(63, std::size_t{1} << 30).size(), 64u * 1024);  // big slices are capped
}

// Drains an Output the way the server does, but into a string.
std::string drain(Output& output) {
    std::string bytes;
    do {
        bytes += output.text.substr(output.text_sent);
        while (output.filler_left > 0) {
            const std::string_view slice = filler_text(output.filler_position, output.filler_left);
            bytes += slice;
            output.filler_left -= slice.size();
            output.filler_position += slice.size();
        }
        output.text_sent = output.text.size();
    } while (output.refill());
    return bytes;
}

TEST(Answers, AChunkedBodyHasTheSameBytesAsTheSameSizeOfBytesBody) {
    const AnswerContext context{std::chrono::milliseconds(0), "127.0.0.1:1", nullptr};
    for (const std::uint64_t n : {0, 1, 5, 100, 16 * 1024, 40'000}) {
        const std::string size = std::to_string(n);
        Answer chunked = answer({"GET", "/chunked/" + size, "h"}, 7, context);
        Answer plain = answer({"GET", "/bytes/" + size, "h"}, 7, context);
        const test::Reply chunked_reply = test::parse_reply(drain(chunked.output));
        const test::Reply plain_reply = test::parse_reply(drain(plain.output));
        ASSERT_EQ(chunked_reply.status, 200) << chunked_reply.error;
        ASSERT_EQ(plain_reply.status, 200) << plain_reply.error;
        EXPECT_TRUE(chunked_reply.chunked);
        EXPECT_EQ(chunked_reply.body, test::expected_body("/chunked/" + size, 7, n));
        EXPECT_EQ(plain_reply.body, test::expected_body("/bytes/" + size, 7, n));
        EXPECT_EQ(chunked_reply.trailers.at(0).second, size);
    }
}

TEST(Site, EveryRedirectHasALocationAndEveryPageAContentType) {
    for (const SitePage& page : site_pages()) {
        EXPECT_TRUE(page.path.starts_with("/site")) << page.path;
        EXPECT_TRUE(page.status == 200 || page.status == 301 || page.status == 302) << page.path;
        EXPECT_FALSE(page.content.empty()) << page.path;
        if (page.status == 200) {
            EXPECT_FALSE(page.content_type.empty()) << page.path;
        }
        EXPECT_EQ(find_site_page(page.path), &page) << "listed twice: " << page.path;
    }
    EXPECT_EQ(find_site_page("/site/missing"), nullptr);
}

}  // namespace
}  // namespace sixways::lab
