#include "common/report.hpp"

#include <sys/socket.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <string>
#include <vector>

#include "common/json_reader.hpp"

namespace sixways {
namespace {

using std::chrono::milliseconds;
using testing::HasSubstr;
using testing::Not;

// Any point in time will do, as long as it is not the clock's epoch (which means "never reached").
const Clock::time_point t0 = Clock::time_point{} + std::chrono::hours(1);

Result ok_result(int start_ms, int done_ms, std::size_t body_bytes = 100, int status = 200) {
    Result result;
    result.response.status = status;
    result.response.body_bytes = body_bytes;
    result.timing.start = t0 + milliseconds(start_ms);
    result.timing.done = t0 + milliseconds(done_ms);
    return result;
}

Result failed_result(ErrorKind kind, const std::string& message, int start_ms = 0,
                     int done_ms = 1) {
    Result result;
    result.error = kind;
    result.error_message = message;
    result.timing.start = t0 + milliseconds(start_ms);
    result.timing.done = t0 + milliseconds(done_ms);
    return result;
}

// The numbers of the example in DESIGN.md.
Report design_example() {
    Report report;
    report.stage = "04_callbacks";
    report.url = "http://127.0.0.1:8080/";
    report.requests = 1000;
    report.ok = 1000;
    report.bytes = 100000;
    report.wall_s = 0.131;
    report.cpu_s = 0.05;
    report.max_rss_kb = 4321;
    report.concurrency = 1000;
    report.p50_ms = 102;
    report.p99_ms = 118;
    report.max_ms = 121;
    return report;
}

TEST(Report, TextLineHasTheShapeOfTheDesignExample) {
    EXPECT_EQ(format_text(design_example()),
              "04_callbacks: 1000 requests to http://127.0.0.1:8080/ in 0.131 s (7634 req/s), "
              "1000 ok, 0 failed, 100000 bytes, cpu 0.05 s, "
              "latency p50 102 ms p99 118 ms max 121 ms");
}

TEST(Report, TextRoundsLatencyToWholeMillisecondsAndWallToMilliseconds) {
    Report report = design_example();
    report.wall_s = 2.00049;
    report.p50_ms = 101.6;
    report.p99_ms = 0.4;
    report.max_ms = 250.49;
    EXPECT_THAT(format_text(report), HasSubstr(" in 2.000 s (500 req/s)"));
    EXPECT_THAT(format_text(report), HasSubstr("latency p50 102 ms p99 0 ms max 250 ms"));
}

TEST(Report, TextShowsNoLatencyWhenNoRequestSucceeded) {
    Report report = summarise("01_blocking", "http://127.0.0.1:1/", 2,
                              {failed_result(ErrorKind::connect, "connect: Connection refused"),
                               failed_result(ErrorKind::connect, "connect: Connection refused")});
    std::string text = format_text(report);
    EXPECT_THAT(text, HasSubstr("0 ok, 2 failed"));
    EXPECT_TRUE(text.ends_with("latency -")) << text;
}

TEST(Report, TextMentionsUnfinishedRequestsOnlyWhenThereAreSome) {
    Report report = design_example();
    EXPECT_THAT(format_text(report), Not(HasSubstr("unfinished")));
    report.ok = 600;
    report.unfinished = 400;
    EXPECT_THAT(format_text(report), HasSubstr("600 ok, 0 failed, 400 unfinished, 100000 bytes"));
}

TEST(Report, TextSaysRequestForOneRequest) {
    Report report = summarise("01_blocking", "http://127.0.0.1:8080/", 1, {ok_result(0, 5)});
    EXPECT_THAT(format_text(report), HasSubstr("01_blocking: 1 request to http://"));
}

TEST(Report, RateIsZeroWhenNoTimePassed) {
    Report report = summarise("01_blocking", "http://127.0.0.1:8080/", 0, {});
    EXPECT_THAT(format_text(report),
                HasSubstr("0 requests to http://127.0.0.1:8080/ in 0.000 s (0 req/s), 0 ok, "
                          "0 failed, 0 bytes"));
}

TEST(Report, SummariseCountsResponsesOfAnyStatusAsOk) {
    Report report = summarise("x", "u", 4,
                              {ok_result(0, 10, 100, 200), ok_result(0, 10, 50, 404),
                               ok_result(0, 10, 0, 500),
                               failed_result(ErrorKind::timeout, "timeout after 1 s while waiting")});
    EXPECT_EQ(report.requests, 4u);
    EXPECT_EQ(report.ok, 3u);
    EXPECT_EQ(report.failed, 1u);
    EXPECT_EQ(report.unfinished, 0u);
    EXPECT_EQ(report.bytes, 150u);
    EXPECT_EQ(report.stage, "x");
    EXPECT_EQ(report.url, "u");
}

TEST(Report, SummariseCountsErrorsByKindAndByMessage) {
    Report report = summarise(
        "x", "u", 4,
        {failed_result(ErrorKind::connect, "connect: Connection refused"),
         failed_result(ErrorKind::connect, "connect: Connection refused"),
         failed_result(ErrorKind::connect, "connect: Network is unreachable"),
         failed_result(ErrorKind::protocol, "bad status line")});
    EXPECT_EQ(report.errors, (std::map<std::string, std::size_t>{{"connect", 3}, {"protocol", 1}}));
    EXPECT_EQ(report.error_messages, (std::map<std::string, std::size_t>{
                                         {"bad status line", 1},
                                         {"connect: Connection refused", 2},
                                         {"connect: Network is unreachable", 1}}));
}

TEST(Report, SummariseCountsMissingResultsAsUnfinished) {
    Report report = summarise("x", "u", 10, {ok_result(0, 10), failed_result(ErrorKind::send, "s")});
    EXPECT_EQ(report.ok, 1u);
    EXPECT_EQ(report.failed, 1u);
    EXPECT_EQ(report.unfinished, 8u);
}

TEST(Report, PercentilesAreNearestRankOverOkRequestsOnly) {
    std::vector<Result> results;
    for (int ms = 100; ms >= 1; --ms) {  // order does not matter
        results.push_back(ok_result(0, ms));
    }
    // A failure slower than every response does not count as a latency.
    results.push_back(failed_result(ErrorKind::timeout, "timeout", 0, 5000));
    Report report = summarise("x", "u", results.size(), results);
    EXPECT_DOUBLE_EQ(report.p50_ms, 50);
    EXPECT_DOUBLE_EQ(report.p99_ms, 99);
    EXPECT_DOUBLE_EQ(report.max_ms, 100);
}

TEST(Report, PercentilesOfFewRequestsAreRequestsThatHappened) {
    Report report = summarise("x", "u", 3, {ok_result(0, 30), ok_result(5, 15), ok_result(0, 20)});
    EXPECT_DOUBLE_EQ(report.p50_ms, 20);  // rank ceil(0.50 * 3) = 2
    EXPECT_DOUBLE_EQ(report.p99_ms, 30);  // rank ceil(0.99 * 3) = 3
    EXPECT_DOUBLE_EQ(report.max_ms, 30);

    Report one = summarise("x", "u", 1, {ok_result(0, 7)});
    EXPECT_DOUBLE_EQ(one.p50_ms, 7);
    EXPECT_DOUBLE_EQ(one.p99_ms, 7);
}

TEST(Report, ConcurrencyOfRequestsOneAfterAnotherIsOne) {
    // Each starts exactly when the previous one ended: touching intervals do not overlap.
    Report report = summarise("x", "u", 3, {ok_result(0, 10), ok_result(10, 20), ok_result(20, 30)});
    EXPECT_EQ(report.concurrency, 1u);
}

TEST(Report, ConcurrencyCountsOverlappingRequests) {
    Report report = summarise("x", "u", 2, {ok_result(0, 10), ok_result(9, 20)});
    EXPECT_EQ(report.concurrency, 2u);
}

TEST(Report, ConcurrencyIsTheMostInFlightAtOneInstantNotTheNumberThatOverlapSomething) {
    // A long request overlaps three short ones, but the short ones never overlap each other.
    Report report = summarise("x", "u", 4,
                              {ok_result(0, 100), ok_result(10, 20), ok_result(30, 40),
                               failed_result(ErrorKind::receive, "r", 50, 60)});
    EXPECT_EQ(report.concurrency, 2u);
}

TEST(Report, ConcurrencyCountsFailedRequestsToo) {
    Report report = summarise("x", "u", 3,
                              {failed_result(ErrorKind::connect, "c", 0, 10),
                               failed_result(ErrorKind::connect, "c", 0, 10),
                               failed_result(ErrorKind::connect, "c", 5, 10)});
    EXPECT_EQ(report.concurrency, 3u);
}

TEST(Report, ConcurrencyCountsARequestThatTookNoTimeAtAll) {
    // start == done: it was in flight for that instant, alone or beside another.
    EXPECT_EQ(summarise("x", "u", 1, {failed_result(ErrorKind::limit, "l", 5, 5)}).concurrency, 1u);
    EXPECT_EQ(summarise("x", "u", 2, {ok_result(0, 10), failed_result(ErrorKind::limit, "l", 5, 5)})
                  .concurrency,
              2u);
    // Touching the end of another request, it does not overlap it.
    EXPECT_EQ(summarise("x", "u", 2, {ok_result(0, 10), failed_result(ErrorKind::limit, "l", 10, 10)})
                  .concurrency,
              1u);
}

TEST(Report, ConcurrencyIgnoresRequestsThatNeverStarted) {
    Result never_started;
    never_started.error = ErrorKind::resolve;
    never_started.error_message = "resolve: Name or service not known";
    Report report = summarise("x", "u", 2, {never_started, never_started});
    EXPECT_EQ(report.concurrency, 0u);
    EXPECT_EQ(report.failed, 2u);
}

TEST(Report, ErrorCountsListMostFrequentFirst) {
    Report report = summarise(
        "x", "u", 5,
        {failed_result(ErrorKind::receive, "receive: Connection reset by peer"),
         failed_result(ErrorKind::connect, "connect: Connection refused"),
         failed_result(ErrorKind::connect, "connect: Connection refused"),
         failed_result(ErrorKind::connect, "connect: Connection refused"),
         failed_result(ErrorKind::timeout, "timeout after 1 s while receiving")});
    EXPECT_EQ(format_error_counts(report),
              "     3 x connect: Connection refused\n"
              "     1 x receive: Connection reset by peer\n"
              "     1 x timeout after 1 s while receiving\n");
}

TEST(Report, ErrorCountsAreEmptyWhenNothingFailed) {
    EXPECT_EQ(format_error_counts(design_example()), "");
}

TEST(Report, JsonHasExactlyTheDesignKeysInOrder) {
    EXPECT_EQ(format_json(design_example()),
              "{\"stage\":\"04_callbacks\",\"url\":\"http://127.0.0.1:8080/\",\"requests\":1000,"
              "\"ok\":1000,\"failed\":0,\"bytes\":100000,\"wall_s\":0.131000,\"cpu_s\":0.050000,"
              "\"max_rss_kb\":4321,\"concurrency\":1000,"
              "\"latency_ms\":{\"p50\":102.000,\"p99\":118.000,\"max\":121.000},\"errors\":{}}");
}

TEST(Report, JsonCountsErrorsByKindAndAddsUnfinishedOnlyWhenNonZero) {
    Report report = summarise("02_threads", "http://[::1]:8080/a", 5,
                              {ok_result(0, 12), failed_result(ErrorKind::connect, "c"),
                               failed_result(ErrorKind::timeout, "t"),
                               failed_result(ErrorKind::connect, "c")});
    std::string json = format_json(report);
    EXPECT_THAT(json, HasSubstr("\"ok\":1,\"failed\":3,\"unfinished\":1,\"bytes\":100,"));
    EXPECT_THAT(json, HasSubstr("\"errors\":{\"connect\":2,\"timeout\":1}}"));
    EXPECT_THAT(json, HasSubstr("\"latency_ms\":{\"p50\":12.000,\"p99\":12.000,\"max\":12.000}"));
    EXPECT_THAT(format_json(design_example()), Not(HasSubstr("unfinished")));
}

TEST(Report, JsonLatencyIsNullWhenNoRequestSucceeded) {
    Report report = summarise("x", "u", 1, {failed_result(ErrorKind::connect, "c")});
    EXPECT_THAT(format_json(report),
                HasSubstr("\"latency_ms\":{\"p50\":null,\"p99\":null,\"max\":null}"));
}

TEST(Report, JsonEscapesStrings) {
    Report report = design_example();
    report.stage = "a\"b\\c\nd\te\x01";
    report.url = "http://h/caf\xc3\xa9";  // UTF-8 passes through
    std::string json = format_json(report);
    EXPECT_THAT(json, HasSubstr("\"stage\":\"a\\\"b\\\\c\\nd\\te\\u0001\""));
    EXPECT_THAT(json, HasSubstr("\"url\":\"http://h/caf\xc3\xa9\""));
}

TEST(Report, JsonReplacesBytesThatAreNotUtf8AndStaysReadable) {
    Report report = design_example();
    // Latin-1 'é', two bytes never used in UTF-8, an overlong '/', a surrogate, then good UTF-8.
    report.url = "http://h/caf\xE9/\xFF\xFE/\xC0\xAF/\xED\xA0\x80/\xE2\x82\xAC";
    const std::string json = format_json(report);
    const std::string replacement = "\xEF\xBF\xBD";
    EXPECT_THAT(json, HasSubstr("\"url\":\"http://h/caf" + replacement + "/" + replacement + replacement + "/" +
                                replacement + replacement + "/" + replacement + replacement + replacement +
                                "/\xE2\x82\xAC\""));
    EXPECT_EQ(parse_json(json).at("url").string.substr(0, 12), "http://h/caf");
}

TEST(Report, JsonKeepsMicrosecondsOfWallAndCpuTime) {
    Report report = design_example();
    report.wall_s = 12.3456789;
    report.cpu_s = 0.000123;
    report.p50_ms = 0.25;
    std::string json = format_json(report);
    EXPECT_THAT(json, HasSubstr("\"wall_s\":12.345679,\"cpu_s\":0.000123,"));
    EXPECT_THAT(json, HasSubstr("\"p50\":0.250,"));
}

TEST(Report, ProcessUsageReadsCpuTimeAndPeakMemory) {
    Report report;
    // Burn a little CPU so the process has used some; the value itself is not asserted.
    volatile unsigned long sink = 0;
    for (unsigned long i = 0; i < 20'000'000; ++i) {
        sink = sink + i;
    }
    add_process_usage(report);
    EXPECT_GT(report.max_rss_kb, 0);
    EXPECT_GT(report.cpu_s, 0.0);
}

// ---- The helpers that keep error kinds and messages the same in every stage ----

TEST(ErrorHelpers, KindNamesAreTheReportsKeys) {
    EXPECT_STREQ(to_string(ErrorKind::resolve), "resolve");
    EXPECT_STREQ(to_string(ErrorKind::connect), "connect");
    EXPECT_STREQ(to_string(ErrorKind::send), "send");
    EXPECT_STREQ(to_string(ErrorKind::receive), "receive");
    EXPECT_STREQ(to_string(ErrorKind::timeout), "timeout");
    EXPECT_STREQ(to_string(ErrorKind::protocol), "protocol");
    EXPECT_STREQ(to_string(ErrorKind::limit), "limit");
}

TEST(ErrorHelpers, ResourceExhaustionIsALimit) {
    for (int error_number : {EMFILE, ENFILE, ENOBUFS, ENOMEM, EAGAIN, EADDRNOTAVAIL}) {
        EXPECT_EQ(kind_for_errno(error_number, ErrorKind::connect), ErrorKind::limit)
            << error_number;
    }
    EXPECT_EQ(kind_for_errno(ECONNREFUSED, ErrorKind::connect), ErrorKind::connect);
    EXPECT_EQ(kind_for_errno(ECONNRESET, ErrorKind::receive), ErrorKind::receive);
}

TEST(ErrorHelpers, MessagesNameTheCallAndTheReason) {
    EXPECT_EQ(errno_message("connect", ECONNREFUSED), "connect: Connection refused");
    EXPECT_EQ(timeout_message(std::chrono::seconds(10), "receiving"),
              "timeout after 10 s while receiving");
    EXPECT_EQ(timeout_message(milliseconds(250), "connecting"),
              "timeout after 250 ms while connecting");
}

// ---- Resolving (only numeric hosts here: tests never ask a name server) ----

TEST(Resolve, NumericHostsResolveToThemselves) {
    std::vector<Address> v4 = resolve(Url{"127.0.0.1", 8080, "/"});
    ASSERT_EQ(v4.size(), 1u);
    EXPECT_EQ(v4[0].family(), AF_INET);
    EXPECT_EQ(v4[0].to_string(), "127.0.0.1:8080");

    std::vector<Address> v6 = resolve(Url{"::1", 443, "/"});
    ASSERT_EQ(v6.size(), 1u);
    EXPECT_EQ(v6[0].family(), AF_INET6);
    EXPECT_EQ(v6[0].to_string(), "[::1]:443");
}

TEST(Resolve, AFailureSaysResolveAndWhy) {
    // An empty label is refused by the resolver library itself: no query leaves the machine.
    try {
        resolve(Url{"name..invalid", 80, "/"});
        ADD_FAILURE() << "no ResolveError";
    } catch (const ResolveError& error) {
        EXPECT_THAT(error.what(), testing::StartsWith("resolve: "));
        EXPECT_GT(std::string(error.what()).size(), std::string("resolve: ").size());
    }
}

}  // namespace
}  // namespace sixways
