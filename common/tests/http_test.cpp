#include "common/http.hpp"

#include <malloc.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sixways {
namespace {

using Status = ResponseParser::Status;

// Everything a parser ends up with, so that two runs can be compared as a whole.
struct Outcome {
    Status status = Status::need_more;
    std::string error;
    bool headers_done = false;
    int code = 0;
    std::string reason;
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
    std::size_t body_bytes = 0;

    friend bool operator==(const Outcome&, const Outcome&) = default;
};

const char* name_of(Status status) {
    switch (status) {
    case Status::need_more: return "need_more";
    case Status::complete: return "complete";
    case Status::error: return "error";
    }
    return "?";
}

// So that a failed comparison shows what differed.
std::ostream& operator<<(std::ostream& out, const Outcome& outcome) {
    out << name_of(outcome.status) << " error=\"" << outcome.error << "\" headers_done=" << outcome.headers_done
        << " code=" << outcome.code << " reason=\"" << outcome.reason << "\" headers={";
    for (const auto& [name, value] : outcome.headers) out << name << ": " << value << "; ";
    out << "} body_bytes=" << outcome.body_bytes << " body=\"" << outcome.body.substr(0, 60)
        << (outcome.body.size() > 60 ? "...\"" : "\"");
    return out;
}

Outcome outcome_of(const ResponseParser& parser) {
    Outcome outcome;
    outcome.status = parser.status();
    outcome.error = parser.error();
    outcome.headers_done = parser.headers_done();
    const Response& response = parser.response();
    outcome.code = response.status;
    outcome.reason = response.reason;
    for (const Header& header : response.headers) outcome.headers.emplace_back(header.name, header.value);
    outcome.body = response.body;
    outcome.body_bytes = response.body_bytes;
    return outcome;
}

// Feeds the pieces in order, then tells the parser the connection closed (unless it already
// finished), as a fetcher does when recv() returns 0.
Outcome parse(const std::vector<std::string_view>& pieces,
              std::size_t body_cap = ResponseParser::default_body_cap, bool keep_headers = true) {
    ResponseParser parser(body_cap, keep_headers);
    for (const std::string_view piece : pieces) parser.feed(piece);
    parser.finish();
    return outcome_of(parser);
}

Outcome parse(std::string_view text) { return parse(std::vector<std::string_view>{text}); }

// Feeds the pieces without any finish(): what the parser knows while the connection is still open.
Outcome parse_open(std::string_view text) {
    ResponseParser parser;
    parser.feed(text);
    return outcome_of(parser);
}

Outcome parse_one_byte_at_a_time(std::string_view text) {
    std::vector<std::string_view> pieces;
    for (std::size_t i = 0; i < text.size(); ++i) pieces.push_back(text.substr(i, 1));
    return parse(pieces);
}

std::string error_for(std::string_view text) { return parse(text).error; }

std::string patterned(std::size_t size) {
    std::string text(size, '\0');
    for (std::size_t i = 0; i < size; ++i) text[i] = static_cast<char>('a' + (i * 7 + i / 26) % 26);
    return text;
}

// A chunked body in chunks of the given sizes, with an extension on every other chunk.
std::string chunked(std::string_view body, std::size_t chunk_size) {
    std::string text;
    for (std::size_t offset = 0, n = 0; offset < body.size(); offset += chunk_size, ++n) {
        const std::string_view chunk = body.substr(offset, chunk_size);
        char size_line[32];
        std::snprintf(size_line, sizeof size_line, n % 2 ? "%zx;n=%zu\r\n" : "%zX\r\n", chunk.size(), n);
        text += size_line;
        text += chunk;
        text += "\r\n";
    }
    return text + "0\r\n\r\n";
}

// ---- The same result for every split ---------------------------------------------------------

struct Sample {
    const char* name;
    std::string text;
};

std::vector<Sample> samples() {
    // Big enough for several chunks and reads, small enough to try every split (that costs the
    // square of the size). The 10 MB tests below cover real sizes.
    const std::string big = patterned(9000);
    return {
        {"ContentLength", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Request-Id: 7\r\n\r\nhello"},
        {"ChunkedWithExtensionsAndTrailer",
         "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
         "5;name=value\r\nhello\r\n6 ; x=\"y;z\"\r\n world\r\n0;last\r\nChecksum: abc\r\nX-Trailer: 2\r\n\r\n"},
        {"CloseDelimited", "HTTP/1.0 200 OK\r\nServer: lab\r\n\r\nthe body runs until the connection closes"},
        {"NoContent", "HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n"},
        {"NotModified", "HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n"},
        {"ContinueThenOk",
         "HTTP/1.1 100 Continue\r\nX-Interim: yes\r\n\r\n"
         "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"
         "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"},
        {"BareLineFeeds", "HTTP/1.1 200 OK\nContent-Length: 3\nX-A:  spaced  \n\nabc"},
        {"BareLineFeedsChunked", "HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n\n3\nabc\n0\nT: 1\n\n"},
        {"KeepOpenFollowedByJunk",
         "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ndataHTTP/1.1 500 Oops\r\nContent-Length: 1\r\n\r\nX"},
        {"EmptyReason", "HTTP/1.1 404 \r\nContent-Length: 0\r\n\r\n"},
        {"BigContentLength", "HTTP/1.1 200 OK\r\nContent-Length: 9000\r\n\r\n" + big},
        {"BigChunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked(big, 997)},
        {"BadStatusLine", "HTTP/1.1 2x0 OK\r\nContent-Length: 0\r\n\r\n"},
        // 40 bytes: quoted whole, without "...", however the CR and LF arrive.
        {"BadStatusLineOfExactlyTheQuoteLength", "XTTP/1.1 200 OK" + std::string(25, '.') + "\r\n\r\n"},
        {"NotHttpAtAll", "SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3 and a rather long banner\r\n"},
        {"HeaderWithoutColon", "HTTP/1.1 200 OK\r\nContent-Length 5\r\n\r\nhello"},
        {"ConflictingLengths", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!"},
        {"BadChunkSize", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nzz\r\n"},
        {"MissingCrlfAfterChunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello!\r\n0\r\n\r\n"},
        {"ShortBody", "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this"},
        {"CutInHeaders", "HTTP/1.1 200 OK\r\nContent-Len"},
        {"FoldedHeaders",
         "HTTP/1.1 200 OK\r\nX-Long: first  \r\n  second\r\n\tthird\r\nContent-Length:\r\n 5\r\n\r\nhello"},
        {"FoldedTrailer",
         "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nT: 1\r\n 2\r\n\r\n"},
        {"CutInChunkedBody", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel"},
    };
}

void PrintTo(const Sample& sample, std::ostream* out) { *out << sample.name; }

class EverySplit : public testing::TestWithParam<Sample> {};

TEST_P(EverySplit, InTwoPiecesGivesTheSameResultAsOneFeed) {
    const std::string& text = GetParam().text;
    const Outcome whole = parse(text);
    for (std::size_t split = 0; split <= text.size(); ++split) {
        const std::string_view view = text;
        const Outcome pieces = parse({view.substr(0, split), view.substr(split)});
        if (pieces != whole) {
            ADD_FAILURE() << "split at " << split << ":\n  " << pieces << "\nwhole:\n  " << whole;
            return;  // one split is enough to show the bug
        }
    }
}

TEST_P(EverySplit, OneByteAtATimeGivesTheSameResultAsOneFeed) {
    const std::string& text = GetParam().text;
    EXPECT_EQ(parse_one_byte_at_a_time(text), parse(text));
}

INSTANTIATE_TEST_SUITE_P(Samples, EverySplit, testing::ValuesIn(samples()),
                         [](const testing::TestParamInfo<Sample>& info) { return std::string(info.param.name); });

// ---- What each sample parses to -------------------------------------------------------------

std::string sample(std::string_view name) {
    for (const Sample& s : samples()) {
        if (s.name == name) return s.text;
    }
    ADD_FAILURE() << "no sample " << name;
    return "";
}

// The headers are still read for the framing; only keeping them is left out.
TEST(ResponseParser, WithoutKeepingHeadersFramesEverySampleTheSameAndKeepsNone) {
    for (const Sample& s : samples()) {
        SCOPED_TRACE(s.name);
        Outcome kept = parse(s.text);
        Outcome not_kept = parse({s.text}, ResponseParser::default_body_cap, false);
        if (not_kept.headers_done) {
            EXPECT_TRUE(not_kept.headers.empty()) << not_kept;
        }
        kept.headers.clear();
        not_kept.headers.clear();
        EXPECT_EQ(not_kept, kept);
    }
}

// A parser that keeps no headers holds nothing on the heap once it has read a head that arrived in
// one piece: it keeps a line only when the line is split across feeds, and drops the framing
// headers at the end of the head. A client with 10,000 responses coming in holds 10,000 parsers.
// (glibc's mallinfo2; AddressSanitizer has its own allocator: skipped there. Freed chunks that
// malloc caches per thread still count as in use, so a few bytes per parser are allowed.)
TEST(ResponseParser, WithoutKeepingHeadersHoldsNoHeapAfterAHeadThatArrivedWhole) {
    if (mallinfo2().uordblks == 0) GTEST_SKIP() << "mallinfo2 does not see this allocator";
    const std::string head =
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nX-Request-Id: 25003\r\n"
        "Content-Length: 100\r\nConnection: close\r\n\r\n";
    constexpr std::size_t count = 200;
    std::vector<ResponseParser> parsers;
    parsers.reserve(count);
    for (std::size_t i = 0; i < count; ++i) parsers.emplace_back(0, false);
    const std::size_t before = mallinfo2().uordblks;
    for (ResponseParser& parser : parsers) {
        ASSERT_EQ(parser.feed(head), ResponseParser::Status::need_more);
        ASSERT_TRUE(parser.headers_done());
    }
    const std::size_t after = mallinfo2().uordblks;
    EXPECT_LT((after - std::min(after, before)) / count, 8u);
}

TEST(ResponseParser, ReadsAContentLengthResponse) {
    const Outcome outcome = parse(sample("ContentLength"));
    EXPECT_EQ(outcome.status, Status::complete);
    EXPECT_EQ(outcome.code, 200);
    EXPECT_EQ(outcome.reason, "OK");
    const decltype(outcome.headers) expected{{"Content-Length", "5"}, {"X-Request-Id", "7"}};
    EXPECT_EQ(outcome.headers, expected);
    EXPECT_EQ(outcome.body, "hello");
    EXPECT_EQ(outcome.body_bytes, 5u);
}

TEST(ResponseParser, DecodesAChunkedBodyIgnoringExtensionsAndDiscardingTheTrailer) {
    const Outcome outcome = parse(sample("ChunkedWithExtensionsAndTrailer"));
    EXPECT_EQ(outcome.status, Status::complete) << outcome;
    EXPECT_EQ(outcome.body, "hello world");
    EXPECT_EQ(outcome.body_bytes, 11u);
    const decltype(outcome.headers) expected{{"Transfer-Encoding", "chunked"}};
    EXPECT_EQ(outcome.headers, expected);
}

TEST(ResponseParser, CompletesABodyWithoutFramingWhenTheConnectionCloses) {
    const std::string text = sample("CloseDelimited");
    EXPECT_EQ(parse_open(text).status, Status::need_more);
    const Outcome outcome = parse(text);
    EXPECT_EQ(outcome.status, Status::complete);
    EXPECT_EQ(outcome.body, "the body runs until the connection closes");
}

TEST(ResponseParser, Gives204NoBodyEvenWithAContentLength) {
    const Outcome outcome = parse_open(sample("NoContent"));
    EXPECT_EQ(outcome.status, Status::complete);
    EXPECT_EQ(outcome.code, 204);
    EXPECT_EQ(outcome.body_bytes, 0u);
}

TEST(ResponseParser, Gives304NoBodyEvenWhenChunked) {
    const Outcome outcome = parse_open(sample("NotModified"));
    EXPECT_EQ(outcome.status, Status::complete);
    EXPECT_EQ(outcome.code, 304);
    EXPECT_EQ(outcome.body_bytes, 0u);
}

TEST(ResponseParser, SkipsInterimResponsesWithTheirHeaders) {
    const Outcome outcome = parse(sample("ContinueThenOk"));
    EXPECT_EQ(outcome.status, Status::complete);
    EXPECT_EQ(outcome.code, 200);
    EXPECT_EQ(outcome.reason, "OK");
    const decltype(outcome.headers) expected{{"Content-Length", "2"}};
    EXPECT_EQ(outcome.headers, expected);
    EXPECT_EQ(outcome.body, "ok");
}

TEST(ResponseParser, Skips102Processing) {
    const Outcome outcome = parse("HTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n");
    EXPECT_EQ(outcome.status, Status::complete);
    EXPECT_EQ(outcome.code, 201);
}

TEST(ResponseParser, AcceptsBareLineFeeds) {
    const Outcome outcome = parse(sample("BareLineFeeds"));
    EXPECT_EQ(outcome.status, Status::complete);
    EXPECT_EQ(outcome.body, "abc");
    const decltype(outcome.headers) expected{{"Content-Length", "3"}, {"X-A", "spaced"}};
    EXPECT_EQ(outcome.headers, expected);
    const Outcome chunked_outcome = parse(sample("BareLineFeedsChunked"));
    EXPECT_EQ(chunked_outcome.status, Status::complete);
    EXPECT_EQ(chunked_outcome.body, "abc");
}

TEST(ResponseParser, StopsAtContentLengthAndIgnoresWhatFollows) {
    const Outcome outcome = parse_open(sample("KeepOpenFollowedByJunk"));
    EXPECT_EQ(outcome.status, Status::complete);
    EXPECT_EQ(outcome.code, 200);
    EXPECT_EQ(outcome.body, "data");
    EXPECT_EQ(outcome.body_bytes, 4u);
}

TEST(ResponseParser, AcceptsAnEmptyReasonWithOrWithoutTheSpace) {
    Outcome outcome = parse(sample("EmptyReason"));
    EXPECT_EQ(outcome.status, Status::complete);
    EXPECT_EQ(outcome.code, 404);
    EXPECT_EQ(outcome.reason, "");
    outcome = parse("HTTP/1.1 404\r\nContent-Length: 0\r\n\r\n");
    EXPECT_EQ(outcome.status, Status::complete);
    EXPECT_EQ(outcome.code, 404);
    EXPECT_EQ(outcome.reason, "");
}

TEST(ResponseParser, KeepsAReasonWithSpaces) {
    EXPECT_EQ(parse("HTTP/1.0 503 Service  Unavailable \r\n\r\n").reason, "Service  Unavailable ");
}

TEST(ResponseParser, ReadsABigBodyInChunksOfEverySize) {
    const std::string big = patterned(9000);
    EXPECT_EQ(parse(sample("BigContentLength")).body, big);
    EXPECT_EQ(parse(sample("BigChunked")).body, big);
}

TEST(ResponseParser, TrimsWhitespaceAroundHeaderValuesAndKeepsItInside) {
    const Outcome outcome = parse("HTTP/1.1 200 OK\r\nX-A: \t a  b \t\r\nX-Empty:\r\nX-Spaces:   \r\n\r\n");
    const decltype(outcome.headers) expected{{"X-A", "a  b"}, {"X-Empty", ""}, {"X-Spaces", ""}};
    EXPECT_EQ(outcome.headers, expected);
}

TEST(ResponseParser, AcceptsObsTextInHeaderValues) {
    EXPECT_EQ(parse("HTTP/1.1 200 OK\r\nX-Name: caf\xc3\xa9\r\n\r\n").headers.at(0).second, "caf\xc3\xa9");
}

// ---- When complete is returned ----------------------------------------------------------------

TEST(ResponseParser, ReturnsCompleteFromTheFeedThatDeliversTheLastBodyByte) {
    const std::string text = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
    ResponseParser parser;
    EXPECT_EQ(parser.feed(std::string_view(text).substr(0, text.size() - 1)), Status::need_more);
    EXPECT_EQ(parser.feed(std::string_view(text).substr(text.size() - 1)), Status::complete);
}

TEST(ResponseParser, ReturnsCompleteFromTheFeedThatEndsAChunkedBody) {
    const std::string text = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n";
    ResponseParser parser;
    EXPECT_EQ(parser.feed(std::string_view(text).substr(0, text.size() - 1)), Status::need_more);
    EXPECT_EQ(parser.feed(std::string_view(text).substr(text.size() - 1)), Status::complete);
    EXPECT_EQ(parser.response().body, "hi");
}

TEST(ResponseParser, ReturnsCompleteFromTheFeedThatEndsTheHeadWhenThereIsNoBody) {
    ResponseParser parser;
    EXPECT_EQ(parser.feed("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r"), Status::need_more);
    EXPECT_EQ(parser.feed("\n"), Status::complete);
}

TEST(ResponseParser, ChangesNothingAfterComplete) {
    ResponseParser parser;
    ASSERT_EQ(parser.feed("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"), Status::complete);
    const Outcome before = outcome_of(parser);
    EXPECT_EQ(parser.feed("more bytes that are not HTTP\r\n\r\n"), Status::complete);
    EXPECT_EQ(parser.finish(), Status::complete);
    EXPECT_EQ(outcome_of(parser), before);
}

TEST(ResponseParser, ChangesNothingAfterAnError) {
    ResponseParser parser;
    ASSERT_EQ(parser.feed("HTTP/1.1 200 OK\r\nbroken\r\n"), Status::error);
    const Outcome before = outcome_of(parser);
    EXPECT_EQ(parser.feed("Content-Length: 0\r\n\r\n"), Status::error);
    EXPECT_EQ(parser.finish(), Status::error);
    EXPECT_EQ(outcome_of(parser), before);
}

TEST(ResponseParser, NeedsMoreUntilAnythingArrives) {
    ResponseParser parser;
    EXPECT_EQ(parser.feed(""), Status::need_more);
    EXPECT_EQ(parser.status(), Status::need_more);
    EXPECT_FALSE(parser.headers_done());
}

// ---- headers_done -----------------------------------------------------------------------------

TEST(ResponseParser, SaysHeadersAreDoneOnceTheFinalHeadIsRead) {
    ResponseParser parser;
    parser.feed("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n");
    EXPECT_FALSE(parser.headers_done());
    parser.feed("\r\nhe");
    EXPECT_TRUE(parser.headers_done());
    EXPECT_EQ(parser.status(), Status::need_more);
    EXPECT_EQ(parser.response().status, 200);
}

TEST(ResponseParser, DoesNotCountAnInterimHeadAsTheHeaders) {
    ResponseParser parser;
    parser.feed("HTTP/1.1 100 Continue\r\n\r\n");
    EXPECT_FALSE(parser.headers_done());
    parser.feed("HTTP/1.1 200 OK\r\n\r\n");
    EXPECT_TRUE(parser.headers_done());
}

// ---- Status line errors -----------------------------------------------------------------------

TEST(ResponseParser, RejectsBadStatusLines) {
    EXPECT_EQ(error_for("HTTP/1.1 2x0 OK\r\n\r\n"), "bad status line: \"HTTP/1.1 2x0 OK\"");
    EXPECT_EQ(error_for("HTTP/1.1 20 OK\r\n\r\n"), "bad status line: \"HTTP/1.1 20 OK\"");
    EXPECT_EQ(error_for("HTTP/1.1 2000 OK\r\n\r\n"), "bad status line: \"HTTP/1.1 2000 OK\"");
    EXPECT_EQ(error_for("HTTP/1.1 200OK\r\n\r\n"), "bad status line: \"HTTP/1.1 200OK\"");
    EXPECT_EQ(error_for("HTTP/1.1  200 OK\r\n\r\n"), "bad status line: \"HTTP/1.1  200 OK\"");
    EXPECT_EQ(error_for("HTTP/2 200 OK\r\n\r\n"), "bad status line: \"HTTP/2 200 OK\"");
    EXPECT_EQ(error_for("http/1.1 200 OK\r\n\r\n"), "bad status line: \"http/1.1 200 OK\"");
    EXPECT_EQ(error_for("HTTP/1.x 200 OK\r\n\r\n"), "bad status line: \"HTTP/1.x 200 OK\"");
    EXPECT_EQ(error_for("ICY 200 OK\r\n\r\n"), "bad status line: \"ICY 200 OK\"");
    EXPECT_EQ(error_for("\r\nHTTP/1.1 200 OK\r\n\r\n"), "bad status line: \"\"");
}

TEST(ResponseParser, RejectsStatusCodesOutside100To599) {
    EXPECT_EQ(error_for("HTTP/1.1 099 Low\r\n\r\n"), "bad status line: \"HTTP/1.1 099 Low\"");
    EXPECT_EQ(error_for("HTTP/1.1 600 High\r\n\r\n"), "bad status line: \"HTTP/1.1 600 High\"");
    EXPECT_EQ(parse("HTTP/1.1 599 Edge\r\n\r\n").code, 599);
}

TEST(ResponseParser, RejectsAControlCharacterInTheReason) {
    EXPECT_EQ(error_for(std::string_view("HTTP/1.1 200 O\0K\r\n\r\n", 20)), "bad status line: \"HTTP/1.1 200 O\\x00K\"");
    EXPECT_EQ(error_for("HTTP/1.1 200 O\rK\r\n\r\n"), "bad status line: \"HTTP/1.1 200 O\\rK\"");
}

TEST(ResponseParser, QuotesAtMost40BytesOfABadStatusLine) {
    EXPECT_EQ(error_for("HTTP/1.1 200 OK but then a much longer reason with a \x01 in it\r\n\r\n"),
              "bad status line: \"HTTP/1.1 200 OK but then a much longer r\"...");
}

TEST(ResponseParser, QuotesABadStatusLineOf40BytesWhole) {
    EXPECT_EQ(error_for(sample("BadStatusLineOfExactlyTheQuoteLength")),
              "bad status line: \"XTTP/1.1 200 OK" + std::string(25, '.') + "\"");
}

TEST(ResponseParser, EscapesUnprintableBytesInTheQuote) {
    EXPECT_EQ(error_for(std::string_view("\x16\x03\x01\x00\"\\\t\xff\r\n", 10)),
              "bad status line: \"\\x16\\x03\\x01\\x00\\\"\\\\\\t\\xff\"");
}

TEST(ResponseParser, RejectsAServerThatIsNotSpeakingHttpWithoutWaitingForTheEnd) {
    ResponseParser parser;
    EXPECT_EQ(parser.feed(std::string(100, 'x')), Status::error);
    EXPECT_EQ(parser.error(), "bad status line: \"" + std::string(40, 'x') + "\"...");
}

// Found by fuzz/http_response_fuzzer.cpp: fed at once, more than 64 KiB of it was refused as too
// large; fed in pieces, as a bad status line after the first piece.
TEST(ResponseParser, RejectsMoreThan64KiBThatIsNotHttpTheSameWayWhetherCutOrNot) {
    const std::string text(ResponseParser::max_header_bytes + 100, 'x');
    const std::string_view view = text;
    const std::string expected = "bad status line: \"" + std::string(40, 'x') + "\"...";
    EXPECT_EQ(parse(text).error, expected);
    EXPECT_EQ(parse({view.substr(0, 50), view.substr(50)}).error, expected);
}

TEST(ResponseParser, RejectsA101BecauseItNeverAskedToUpgrade) {
    EXPECT_EQ(error_for("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n"),
              "unexpected 101 Switching Protocols (the request did not ask to upgrade)");
}

// ---- Header line errors -----------------------------------------------------------------------

TEST(ResponseParser, RejectsAHeaderLineWithoutColon) {
    EXPECT_EQ(error_for(sample("HeaderWithoutColon")), "bad header line (no colon): \"Content-Length 5\"");
}

TEST(ResponseParser, RejectsWhitespaceBeforeTheColon) {
    EXPECT_EQ(error_for("HTTP/1.1 200 OK\r\nContent-Length : 5\r\n\r\nhello"),
              "bad header line (whitespace before the colon): \"Content-Length : 5\"");
    EXPECT_EQ(error_for("HTTP/1.1 200 OK\r\nContent-Length\t: 5\r\n\r\nhello"),
              "bad header line (whitespace before the colon): \"Content-Length\\t: 5\"");
}

TEST(ResponseParser, RejectsAnEmptyHeaderName) {
    EXPECT_EQ(error_for("HTTP/1.1 200 OK\r\n: value\r\n\r\n"), "bad header line (empty name): \": value\"");
}

TEST(ResponseParser, RejectsABadCharacterInAHeaderName) {
    EXPECT_EQ(error_for("HTTP/1.1 200 OK\r\nX(Y): 1\r\n\r\n"),
              "bad header line (bad character in the name): \"X(Y): 1\"");
    EXPECT_EQ(error_for("HTTP/1.1 200 OK\r\nX Y: 1\r\n\r\n"),
              "bad header line (bad character in the name): \"X Y: 1\"");
}

TEST(ResponseParser, RejectsControlCharactersInAHeaderValue) {
    EXPECT_EQ(error_for("HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n"),
              "bad header line (control character in the value): \"X: a\\rb\"");
    EXPECT_EQ(error_for(std::string_view("HTTP/1.1 200 OK\r\nX: a\0b\r\n\r\n", 27)),
              "bad header line (control character in the value): \"X: a\\x00b\"");
    EXPECT_EQ(error_for("HTTP/1.1 200 OK\r\nX: a\x7f\r\n\r\n"),
              "bad header line (control character in the value): \"X: a\\x7f\"");
}

// RFC 9112 5.2: a user agent replaces each obs-fold (a line break followed by spaces or tabs)
// with a space, and goes on.
TEST(ResponseParser, UnfoldsObsoleteLineFoldingIntoOneSpace) {
    const Outcome outcome = parse(sample("FoldedHeaders"));
    ASSERT_EQ(outcome.status, Status::complete) << outcome.error;
    ASSERT_EQ(outcome.headers.size(), 2u);
    EXPECT_EQ(outcome.headers[0], std::make_pair(std::string("X-Long"), std::string("first second third")));
    // The framing is read after unfolding: a Content-Length whose value is on the next line.
    EXPECT_EQ(outcome.headers[1], std::make_pair(std::string("Content-Length"), std::string("5")));
    EXPECT_EQ(outcome.body, "hello");
}

TEST(ResponseParser, UnfoldsAFramingHeaderEvenWhenNotKeepingHeaders) {
    const Outcome outcome = parse({sample("FoldedHeaders")}, ResponseParser::default_body_cap, false);
    ASSERT_EQ(outcome.status, Status::complete) << outcome.error;
    EXPECT_TRUE(outcome.headers.empty());
    EXPECT_EQ(outcome.body, "hello");
}

TEST(ResponseParser, UnfoldsEachHeadOnItsOwnAfterAnInterimResponse) {
    const Outcome outcome = parse("HTTP/1.1 100 Continue\r\nX-A: 1\r\n\r\n"
                                  "HTTP/1.1 200 OK\r\nX-A: 2\r\n 3\r\nContent-Length: 0\r\n\r\n");
    ASSERT_EQ(outcome.status, Status::complete) << outcome.error;
    ASSERT_EQ(outcome.headers.size(), 2u);
    EXPECT_EQ(outcome.headers[0].second, "2 3");
}

TEST(ResponseParser, IgnoresABlankFoldAndAcceptsAFoldedTrailer) {
    const Outcome outcome = parse("HTTP/1.1 200 OK\r\nX-A: a\r\n \t \r\nContent-Length: 0\r\n\r\n");
    ASSERT_EQ(outcome.status, Status::complete) << outcome.error;
    EXPECT_EQ(outcome.headers[0].second, "a");
    const Outcome trailer = parse(sample("FoldedTrailer"));
    ASSERT_EQ(trailer.status, Status::complete) << trailer.error;
    EXPECT_EQ(trailer.body, "ok");
}

TEST(ResponseParser, RejectsAFoldWithNothingToContinueOrWithAControlCharacter) {
    EXPECT_EQ(error_for("HTTP/1.1 200 OK\r\n\tfolded: x\r\n\r\n"),
              "line folding before the first header: \"\\tfolded: x\"");
    EXPECT_EQ(error_for("HTTP/1.1 200 OK\r\nX: a\r\n b\x7f\r\n\r\n"),
              "bad header line (control character in the value): \" b\\x7f\"");
    EXPECT_EQ(error_for("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n folded\r\n\r\n"),
              "line folding before the first trailer: \" folded\"");
}

// ---- Response::header -------------------------------------------------------------------------

TEST(ResponseHeader, FindsAHeaderWhateverTheCase) {
    ResponseParser parser;
    parser.feed("HTTP/1.1 200 OK\r\ncontent-TYPE: text/plain\r\nContent-Length: 0\r\n\r\n");
    const Response& response = parser.response();
    ASSERT_NE(response.header("Content-Type"), nullptr);
    EXPECT_EQ(*response.header("Content-Type"), "text/plain");
    EXPECT_EQ(*response.header("CONTENT-LENGTH"), "0");
}

TEST(ResponseHeader, ReturnsTheFirstOfSeveral) {
    Response response;
    response.headers = {{"Set-Cookie", "a=1"}, {"set-cookie", "b=2"}};
    EXPECT_EQ(*response.header("set-cookie"), "a=1");
}

TEST(ResponseHeader, ReturnsNullForAMissingHeader) {
    Response response;
    response.headers = {{"Content-Length", "0"}};
    EXPECT_EQ(response.header("Content-Type"), nullptr);
    EXPECT_EQ(response.header("Content-Lengt"), nullptr);
}

// ---- Content-Length ---------------------------------------------------------------------------

TEST(ResponseParser, AcceptsRepeatedIdenticalContentLengths) {
    Outcome outcome = parse_open("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello");
    EXPECT_EQ(outcome.status, Status::complete);
    EXPECT_EQ(outcome.body, "hello");
    outcome = parse_open("HTTP/1.1 200 OK\r\nContent-Length: 5, 5,5\r\n\r\nhello");
    EXPECT_EQ(outcome.status, Status::complete);
    EXPECT_EQ(outcome.body, "hello");
    outcome = parse_open("HTTP/1.1 200 OK\r\nContent-Length: 005\r\nContent-Length: 5\r\n\r\nhello");
    EXPECT_EQ(outcome.status, Status::complete);
}

TEST(ResponseParser, RejectsConflictingContentLengths) {
    EXPECT_EQ(error_for(sample("ConflictingLengths")), "conflicting Content-Length values: 5 and 6");
    EXPECT_EQ(error_for("HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\nhello!"),
              "conflicting Content-Length values: 5 and 6");
}

TEST(ResponseParser, RejectsANonNumericContentLength) {
    EXPECT_EQ(error_for("HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\n"), "bad Content-Length: \"abc\"");
    EXPECT_EQ(error_for("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n"), "bad Content-Length: \"-1\"");
    EXPECT_EQ(error_for("HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\nhello"), "bad Content-Length: \"+5\"");
    EXPECT_EQ(error_for("HTTP/1.1 200 OK\r\nContent-Length: 5 5\r\n\r\nhello"), "bad Content-Length: \"5 5\"");
    EXPECT_EQ(error_for("HTTP/1.1 200 OK\r\nContent-Length: 0x10\r\n\r\n"), "bad Content-Length: \"0x10\"");
    EXPECT_EQ(error_for("HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n"), "bad Content-Length: \"\"");
    EXPECT_EQ(error_for("HTTP/1.1 200 OK\r\nContent-Length: ,\r\n\r\n"), "bad Content-Length: \",\"");
}

TEST(ResponseParser, RejectsAContentLengthThatOverflows) {
    EXPECT_EQ(error_for("HTTP/1.1 200 OK\r\nContent-Length: 18446744073709551616\r\n\r\n"),
              "Content-Length too large: \"18446744073709551616\"");
}

TEST(ResponseParser, AcceptsTheLargestContentLength) {
    const Outcome outcome = parse_open("HTTP/1.1 200 OK\r\nContent-Length: 18446744073709551615\r\n\r\nabc");
    EXPECT_EQ(outcome.status, Status::need_more);
    EXPECT_EQ(outcome.body_bytes, 3u);
}

TEST(ResponseParser, CompletesAZeroContentLengthAtTheEndOfTheHead) {
    const Outcome outcome = parse_open("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
    EXPECT_EQ(outcome.status, Status::complete);
    EXPECT_EQ(outcome.body_bytes, 0u);
}

// ---- Transfer-Encoding ------------------------------------------------------------------------

TEST(ResponseParser, LetsChunkedWinOverContentLength) {
    const Outcome outcome = parse_open(
        "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n");
    EXPECT_EQ(outcome.status, Status::complete);
    EXPECT_EQ(outcome.body, "ok");
}

TEST(ResponseParser, IgnoresEvenABadContentLengthWhenChunked) {
    const Outcome outcome = parse_open(
        "HTTP/1.1 200 OK\r\nContent-Length: 1, 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n");
    EXPECT_EQ(outcome.status, Status::complete);
}

TEST(ResponseParser, ReadsChunkedAfterOtherCodingsWithoutDecodingThem) {
    Outcome outcome = parse_open("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, Chunked\r\n\r\n2\r\nzz\r\n0\r\n\r\n");
    EXPECT_EQ(outcome.status, Status::complete);
    EXPECT_EQ(outcome.body, "zz");
    outcome = parse_open(
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nzz\r\n0\r\n\r\n");
    EXPECT_EQ(outcome.status, Status::complete);
}

TEST(ResponseParser, ReadsUntilCloseWhenTheCodingIsNotChunked) {
    const std::string text = "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nContent-Length: 2\r\n\r\nabcdef";
    EXPECT_EQ(parse_open(text).status, Status::need_more);
    EXPECT_EQ(parse(text).body, "abcdef");
}

TEST(ResponseParser, RejectsChunkedThatIsNotTheLastCoding) {
    EXPECT_EQ(error_for("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n"),
              "bad Transfer-Encoding: \"chunked, gzip\"");
    EXPECT_EQ(error_for("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n"),
              "bad Transfer-Encoding: \"chunked, chunked\"");
}

// ---- Chunked body errors ----------------------------------------------------------------------

const std::string chunked_head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";

TEST(ResponseParser, AcceptsUpperCaseHexAndLeadingZerosInChunkSizes) {
    const Outcome outcome = parse_open(chunked_head + "0000000000000000000A\r\n0123456789\r\n00\r\n\r\n");
    EXPECT_EQ(outcome.status, Status::complete);
    EXPECT_EQ(outcome.body, "0123456789");
}

TEST(ResponseParser, RejectsABadChunkSizeLine) {
    EXPECT_EQ(error_for(sample("BadChunkSize")), "bad chunk size line: \"zz\"");
    EXPECT_EQ(error_for(chunked_head + "5 junk\r\nhello\r\n0\r\n\r\n"), "bad chunk size line: \"5 junk\"");
    EXPECT_EQ(error_for(chunked_head + "\r\n"), "bad chunk size line: \"\"");
    EXPECT_EQ(error_for(chunked_head + ";ext\r\n"), "bad chunk size line: \";ext\"");
    EXPECT_EQ(error_for(chunked_head + "-5\r\n"), "bad chunk size line: \"-5\"");
    EXPECT_EQ(error_for(chunked_head + "0x5\r\nhello\r\n0\r\n\r\n"), "bad chunk size line: \"0x5\"");
}

TEST(ResponseParser, RejectsAChunkSizeThatOverflows) {
    EXPECT_EQ(error_for(chunked_head + "10000000000000000\r\n"), "chunk size too large: \"10000000000000000\"");
    const Outcome outcome = parse_open(chunked_head + "ffffffffffffffff\r\nabc");
    EXPECT_EQ(outcome.status, Status::need_more);
    EXPECT_EQ(outcome.body_bytes, 3u);
}

TEST(ResponseParser, BoundsTheChunkSizeLine) {
    const std::string extension = ";" + std::string(4096, 'e');
    EXPECT_EQ(error_for(chunked_head + "5" + extension + "\r\nhello\r\n0\r\n\r\n"),
              "chunk size line longer than 4096 bytes");
    // Exactly 4096 bytes with its CRLF is fine.
    const std::string fits = "5;" + std::string(4096 - 4, 'e') + "\r\n";
    ASSERT_EQ(fits.size(), 4096u);
    EXPECT_EQ(parse_open(chunked_head + fits + "hello\r\n0\r\n\r\n").status, Status::complete);
}

TEST(ResponseParser, RejectsChunkDataNotFollowedByALineEnd) {
    EXPECT_EQ(error_for(sample("MissingCrlfAfterChunk")), "missing CRLF after chunk data");
    EXPECT_EQ(error_for(chunked_head + "5\r\nhello\rX\n0\r\n\r\n"), "missing CRLF after chunk data");
    EXPECT_EQ(error_for(chunked_head + "5\r\nhello\r\r\n0\r\n\r\n"), "missing CRLF after chunk data");
}

TEST(ResponseParser, RejectsABadTrailerLine) {
    EXPECT_EQ(error_for(chunked_head + "0\r\nno colon here\r\n\r\n"),
              "bad trailer line (no colon): \"no colon here\"");
}

TEST(ResponseParser, BoundsTheTrailer) {
    const std::string trailer = "X-Big: " + std::string(64 * 1024, 't') + "\r\n";
    EXPECT_EQ(error_for(chunked_head + "0\r\n" + trailer + "\r\n"), "chunked trailer larger than 64 KiB");
}

// ---- The 64 KiB bound on the head -------------------------------------------------------------

// A head of exactly `size` bytes, ending in the empty line.
std::string head_of_size(std::size_t size, std::string_view status_line = "HTTP/1.1 200 OK\r\n") {
    std::string head(status_line);
    head += "Content-Length: 0\r\n";
    const std::string prefix = "X-Filler: ";
    const std::size_t filler = size - head.size() - prefix.size() - 4;  // "\r\n" twice
    head += prefix + std::string(filler, 'f') + "\r\n\r\n";
    return head;
}

TEST(ResponseParser, AcceptsAHeadOfExactly64KiB) {
    const std::string head = head_of_size(ResponseParser::max_header_bytes);
    ASSERT_EQ(head.size(), 64u * 1024);
    EXPECT_EQ(parse_open(head).status, Status::complete);
    EXPECT_EQ(parse_one_byte_at_a_time(head).status, Status::complete);
}

TEST(ResponseParser, RejectsAHeadOneByteOver64KiB) {
    const std::string head = head_of_size(ResponseParser::max_header_bytes + 1);
    EXPECT_EQ(parse(head).error, "response headers larger than 64 KiB");
    EXPECT_EQ(parse_one_byte_at_a_time(head).error, "response headers larger than 64 KiB");
}

TEST(ResponseParser, RejectsAnEndlessHeaderLineAfter64KiB) {
    ResponseParser parser;
    parser.feed("HTTP/1.1 200 OK\r\nX-Endless: ");
    const std::string piece(1000, 'x');
    Status status = Status::need_more;
    for (int i = 0; i < 100 && status == Status::need_more; ++i) status = parser.feed(piece);
    EXPECT_EQ(status, Status::error);
    EXPECT_EQ(parser.error(), "response headers larger than 64 KiB");
}

TEST(ResponseParser, CountsInterimHeadsTowardThe64KiBBound) {
    const std::string interim = "HTTP/1.1 103 Early Hints\r\nLink: " + std::string(1000, 'l') + "\r\n\r\n";
    std::string text;
    while (text.size() < ResponseParser::max_header_bytes) text += interim;
    text += "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
    EXPECT_EQ(parse(text).error, "response headers larger than 64 KiB");
}

// ---- body_cap ---------------------------------------------------------------------------------

TEST(ResponseParser, KeepsOnlyBodyCapBytesButCountsThemAll) {
    const std::string body = patterned(100);
    const Outcome outcome = parse({"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + body}, 10);
    EXPECT_EQ(outcome.status, Status::complete);
    EXPECT_EQ(outcome.body, body.substr(0, 10));
    EXPECT_EQ(outcome.body_bytes, 100u);
}

TEST(ResponseParser, KeepsNoBodyWithACapOfZero) {
    const Outcome outcome = parse({"HTTP/1.1 200 OK\r\n\r\nsome body"}, 0);
    EXPECT_EQ(outcome.status, Status::complete);
    EXPECT_EQ(outcome.body, "");
    EXPECT_EQ(outcome.body_bytes, 9u);
}

TEST(ResponseParser, AppliesTheCapAcrossChunks) {
    const std::string body = patterned(1000);
    const std::string text = chunked_head + chunked(body, 7);
    const Outcome whole = parse({text}, 100);
    EXPECT_EQ(whole.status, Status::complete);
    EXPECT_EQ(whole.body, body.substr(0, 100));
    EXPECT_EQ(whole.body_bytes, 1000u);
    EXPECT_EQ(parse_one_byte_at_a_time(text).body_bytes, 1000u);
}

// ---- finish(): the connection closed ----------------------------------------------------------

TEST(ResponseParser, ReportsACloseBeforeAnyByte) {
    ResponseParser parser;
    EXPECT_EQ(parser.finish(), Status::error);
    EXPECT_EQ(parser.error(), "connection closed before any response byte");
}

TEST(ResponseParser, ReportsACloseInTheMiddleOfTheHeaders) {
    EXPECT_EQ(error_for("HTTP/1.1 20"), "connection closed in the middle of the headers");
    EXPECT_EQ(error_for("HTTP/1.1 200 OK\r\n"), "connection closed in the middle of the headers");
    EXPECT_EQ(error_for(sample("CutInHeaders")), "connection closed in the middle of the headers");
    EXPECT_EQ(error_for("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r"), "connection closed in the middle of the headers");
}

TEST(ResponseParser, ReportsACloseAfterAnInterimResponse) {
    EXPECT_EQ(error_for("HTTP/1.1 100 Continue\r\n\r\n"),
              "connection closed after a 1xx interim response, before the final response");
    EXPECT_EQ(error_for("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1"), "connection closed in the middle of the headers");
}

TEST(ResponseParser, ReportsHowMuchOfTheBodyArrivedBeforeTheClose) {
    const std::string text = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + patterned(50);
    EXPECT_EQ(error_for(text), "connection closed after 50 of 100 body bytes");
    EXPECT_EQ(error_for("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"),
              "connection closed after 0 of 100 body bytes");
    EXPECT_EQ(error_for(sample("ShortBody")), "connection closed after 9 of 100 body bytes");
}

TEST(ResponseParser, ReportsACloseInTheMiddleOfAChunkedBody) {
    const std::string message = "connection closed in the middle of a chunked body";
    EXPECT_EQ(error_for(chunked_head), message);
    EXPECT_EQ(error_for(chunked_head + "5"), message);
    EXPECT_EQ(error_for(sample("CutInChunkedBody")), message);
    EXPECT_EQ(error_for(chunked_head + "5\r\nhello"), message);
    EXPECT_EQ(error_for(chunked_head + "5\r\nhello\r\n"), message);
    EXPECT_EQ(error_for(chunked_head + "5\r\nhello\r\n0\r\n"), message);
    EXPECT_EQ(error_for(chunked_head + "5\r\nhello\r\n0\r\nX: 1\r\n"), message);
}

TEST(ResponseParser, KeepsTheBodySoFarWhenTheCloseCutsIt) {
    const Outcome outcome = parse(sample("CutInChunkedBody"));
    EXPECT_EQ(outcome.body, "hel");
    EXPECT_TRUE(outcome.headers_done);
}

// ---- Big bodies ------------------------------------------------------------------------------

TEST(ResponseParser, ReadsA10MegabyteBodyInLargeAndOddPieces) {
    const std::size_t size = 10 * 1024 * 1024;
    const std::string body = patterned(size);
    const std::string text = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(size) + "\r\n\r\n" + body;
    for (const std::size_t piece_size : {text.size(), std::size_t{65536}, std::size_t{1000}, std::size_t{7}}) {
        ResponseParser parser;
        Status status = Status::need_more;
        for (std::size_t offset = 0; offset < text.size(); offset += piece_size) {
            status = parser.feed(std::string_view(text).substr(offset, piece_size));
        }
        EXPECT_EQ(status, Status::complete) << piece_size;
        EXPECT_EQ(parser.response().body_bytes, size);
        EXPECT_TRUE(parser.response().body == body) << piece_size;
    }
}

TEST(ResponseParser, ReadsA10MegabyteChunkedBody) {
    const std::size_t size = 10 * 1024 * 1024;
    const std::string body = patterned(size);
    const std::string text = chunked_head + chunked(body, 1024 * 1024 - 1);
    ResponseParser parser;
    Status status = Status::need_more;
    for (std::size_t offset = 0; offset < text.size(); offset += 65536) {
        status = parser.feed(std::string_view(text).substr(offset, 65536));
    }
    EXPECT_EQ(status, Status::complete);
    EXPECT_EQ(parser.response().body_bytes, size);
    EXPECT_TRUE(parser.response().body == body);
}

TEST(ResponseParser, HandsOverTheResponseWithTakeResponse) {
    ResponseParser parser;
    parser.feed(sample("ContentLength"));
    const Response response = parser.take_response();
    EXPECT_EQ(response.status, 200);
    EXPECT_EQ(response.body, "hello");
    ASSERT_NE(response.header("x-request-id"), nullptr);
    EXPECT_EQ(*response.header("x-request-id"), "7");
}

// ---- The request --------------------------------------------------------------------------------

TEST(BuildGetRequest, WritesAnHttp11GetThatAsksToCloseTheConnection) {
    EXPECT_EQ(build_get_request(parse_url("http://example.com:8080/a/b?c=d#frag")),
              "GET /a/b?c=d HTTP/1.1\r\n"
              "Host: example.com:8080\r\n"
              "User-Agent: six-ways-to-fetch\r\n"
              "Accept: */*\r\n"
              "Connection: close\r\n"
              "\r\n");
}

TEST(BuildGetRequest, WritesTheHostHeaderOfAnIpv6LiteralInBrackets) {
    const std::string request = build_get_request(parse_url("http://[::1]:8080"));
    EXPECT_TRUE(request.starts_with("GET / HTTP/1.1\r\nHost: [::1]:8080\r\n")) << request;
}

TEST(BuildGetRequest, LeavesOutPort80FromTheHostHeader) {
    const std::string request = build_get_request(parse_url("http://127.0.0.1/x"));
    EXPECT_TRUE(request.starts_with("GET /x HTTP/1.1\r\nHost: 127.0.0.1\r\n")) << request;
}

}  // namespace
}  // namespace sixways
