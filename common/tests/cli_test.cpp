#include "common/cli.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "common/json_reader.hpp"
#include "common/report.hpp"

namespace sixways {
namespace {

using std::chrono::milliseconds;
using testing::HasSubstr;
using testing::Not;
using testing::StartsWith;

// ---- parse_cli ----

StageInfo plain_stage() {
    StageInfo stage;
    stage.name = "07_test";
    stage.summary = "A stage for tests: it answers from a list.";
    return stage;
}

StageInfo stage_with_flag(bool* value) {
    StageInfo stage = plain_stage();
    stage.flags.push_back({"--one-at-a-time", "poll one socket only, to show the difference", value});
    return stage;
}

// A stage without a deadline or a limit, as 06_tiny is.
StageInfo stage_refusing_timeout_and_concurrency() {
    StageInfo stage = plain_stage();
    stage.refused_options = {"--concurrency", "--timeout"};
    stage.refused_because = "it has no timeouts and no limit";
    return stage;
}

CliOptions parse(std::vector<std::string> args) { return parse_cli(args, plain_stage()); }

// The message of the UsageError that parsing `args` throws; fails the test if none is thrown.
std::string usage_error(std::vector<std::string> args, const StageInfo& stage = plain_stage()) {
    try {
        parse_cli(args, stage);
    } catch (const UsageError& error) {
        return error.what();
    }
    ADD_FAILURE() << "no UsageError";
    return "";
}

TEST(ParseCli, NoArgumentsGiveTheDocumentedDefaults) {
    CliOptions options = parse({});
    EXPECT_EQ(options.requests, 10u);
    EXPECT_EQ(options.url, (Url{"127.0.0.1", 8080, "/"}));
    EXPECT_EQ(options.concurrency, 0u);
    EXPECT_EQ(options.timeout, std::chrono::seconds(10));
    EXPECT_FALSE(options.json);
    EXPECT_FALSE(options.help);
}

TEST(ParseCli, AcceptsARequestCountIncludingZero) {
    EXPECT_EQ(parse({"250"}).requests, 250u);
    EXPECT_EQ(parse({"0"}).requests, 0u);
    EXPECT_EQ(parse({"1000000"}).requests, 1000000u);
}

TEST(ParseCli, RejectsANegativeRequestCount) {
    EXPECT_EQ(usage_error({"-3"}), "N must be a whole number >= 0, not '-3'");
    EXPECT_THAT(usage_error({"-0"}), HasSubstr("whole number >= 0, not '-0'"));
}

TEST(ParseCli, RejectsARequestCountThatIsNotAWholeNumber) {
    for (const char* text : {"ten", "1.5", "+5", "1e3", "", " 5", "5 ", "0x10", "-"}) {
        EXPECT_THAT(usage_error({text}),
                    HasSubstr("N must be a whole number >= 0, not '" + std::string(text) + "'"))
            << text;
    }
}

TEST(ParseCli, RejectsARequestCountThatIsTooLarge) {
    EXPECT_EQ(usage_error({"1000001"}), "N must be at most 1000000, not '1000001'");
    // More than fits in 64 bits: reported as too large, not as garbage.
    EXPECT_THAT(usage_error({"99999999999999999999999999"}), HasSubstr("must be at most 1000000"));
}

TEST(ParseCli, RejectsTheRequestCountGivenTwice) {
    EXPECT_THAT(usage_error({"5", "6"}), HasSubstr("N given twice ('5' and '6')"));
}

TEST(ParseCli, AcceptsUrlAsSeparateOrJoinedValue) {
    EXPECT_EQ(parse({"--url", "http://localhost:9000/x?y=1"}).url,
              (Url{"localhost", 9000, "/x?y=1"}));
    EXPECT_EQ(parse({"--url=http://[::1]:8081/a"}).url, (Url{"::1", 8081, "/a"}));
}

TEST(ParseCli, RejectsABadUrlWithTheParsersReason) {
    std::string message = usage_error({"--url", "https://example.com/"});
    EXPECT_THAT(message, StartsWith("--url: "));
    EXPECT_THAT(message, HasSubstr("https"));
    EXPECT_THAT(usage_error({"--url=ftp://x/"}), StartsWith("--url: "));
}

TEST(ParseCli, RejectsAnOptionWithoutItsValue) {
    EXPECT_EQ(usage_error({"--url"}), "option --url needs a value");
    EXPECT_EQ(usage_error({"5", "--timeout"}), "option --timeout needs a value");
    EXPECT_EQ(usage_error({"--concurrency", "--json"}), "option --concurrency needs a value");
}

TEST(ParseCli, AcceptsConcurrencyOfOneOrMore) {
    EXPECT_EQ(parse({"--concurrency", "1"}).concurrency, 1u);
    EXPECT_EQ(parse({"--concurrency=64"}).concurrency, 64u);
}

TEST(ParseCli, RejectsConcurrencyBelowOneOrNotANumber) {
    EXPECT_EQ(usage_error({"--concurrency", "0"}), "--concurrency must be a whole number >= 1, not '0'");
    EXPECT_THAT(usage_error({"--concurrency", "-2"}), HasSubstr(">= 1, not '-2'"));
    EXPECT_THAT(usage_error({"--concurrency=many"}), HasSubstr(">= 1, not 'many'"));
    EXPECT_THAT(usage_error({"--concurrency="}), HasSubstr(">= 1, not ''"));
    EXPECT_THAT(usage_error({"--concurrency", "18446744073709551616"}),
                HasSubstr("--concurrency must be at most"));
}

TEST(ParseCli, AcceptsTimeoutsInSecondsAndMilliseconds) {
    EXPECT_EQ(parse({"--timeout", "2"}).timeout, std::chrono::seconds(2));
    EXPECT_EQ(parse({"--timeout", "2.5s"}).timeout, milliseconds(2500));
    EXPECT_EQ(parse({"--timeout=250ms"}).timeout, milliseconds(250));
}

TEST(ParseCli, RejectsABadOrZeroTimeout) {
    EXPECT_THAT(usage_error({"--timeout", "soon"}), StartsWith("--timeout: "));
    EXPECT_THAT(usage_error({"--timeout=-1"}), StartsWith("--timeout: "));
    EXPECT_EQ(usage_error({"--timeout", "0"}), "--timeout must be more than 0, not '0'");
}

TEST(ParseCli, JsonIsAFlagWithoutValue) {
    EXPECT_TRUE(parse({"--json"}).json);
    EXPECT_EQ(usage_error({"--json=yes"}), "option --json takes no value");
}

TEST(ParseCli, TraceTakesAFileName) {
    EXPECT_EQ(parse({}).trace_path, "");
    EXPECT_EQ(parse({"--trace", "run.json"}).trace_path, "run.json");
    EXPECT_EQ(parse({"--trace=out/run.json", "5"}).trace_path, "out/run.json");
    EXPECT_EQ(usage_error({"--trace"}), "option --trace needs a value");
    EXPECT_EQ(usage_error({"--trace", "--json"}), "option --trace needs a value");
    EXPECT_EQ(usage_error({"--trace="}), "--trace needs a file name");
}

TEST(ParseCli, RejectsUnknownOptions) {
    EXPECT_EQ(usage_error({"--verbose"}), "unknown option '--verbose'");
    EXPECT_EQ(usage_error({"-x"}), "unknown option '-x'");
    EXPECT_EQ(usage_error({"--urls=http://a/"}), "unknown option '--urls=http://a/'");
    // Another stage's flag is unknown here.
    EXPECT_EQ(usage_error({"--one-at-a-time"}), "unknown option '--one-at-a-time'");
}

TEST(ParseCli, SetsTheStagesOwnFlags) {
    bool value = false;
    StageInfo stage = stage_with_flag(&value);
    parse_cli({"3"}, stage);
    EXPECT_FALSE(value);
    parse_cli({"3", "--one-at-a-time"}, stage);
    EXPECT_TRUE(value);
    EXPECT_EQ(usage_error({"--one-at-a-time=1"}, stage), "option --one-at-a-time takes no value");
}

TEST(ParseCli, RefusesTheSharedOptionsTheStageDoesNotOffer) {
    const StageInfo stage = stage_refusing_timeout_and_concurrency();
    EXPECT_EQ(usage_error({"--timeout", "2s"}, stage),
              "option --timeout is not offered by 07_test: it has no timeouts and no limit");
    EXPECT_EQ(usage_error({"5", "--concurrency=3"}, stage),
              "option --concurrency is not offered by 07_test: it has no timeouts and no limit");
    // Without its value too: the refusal says more than "needs a value" would.
    EXPECT_THAT(usage_error({"--timeout"}, stage), HasSubstr("not offered by 07_test"));
    // The other shared options are still there.
    CliOptions options = parse_cli({"5", "--url", "http://127.0.0.1:1/", "--json", "--trace", "t.json"},
                                   stage);
    EXPECT_EQ(options.requests, 5u);
    EXPECT_TRUE(options.json);
    EXPECT_EQ(options.trace_path, "t.json");
    // Another stage still takes them.
    EXPECT_EQ(parse({"--timeout", "2s", "--concurrency", "3"}).concurrency, 3u);
}

TEST(ParseCli, HelpIsRecognisedInBothSpellings) {
    EXPECT_TRUE(parse({"-h"}).help);
    EXPECT_TRUE(parse({"--help"}).help);
    EXPECT_TRUE(parse({"5", "--json", "--help"}).help);
    // Whatever follows is not looked at: the help is printed and nothing is sent.
    EXPECT_TRUE(parse({"--help", "--bogus"}).help);
}

TEST(ParseCli, AcceptsOptionsInAnyOrder) {
    CliOptions options = parse({"--json", "--timeout", "1", "7", "--url", "http://127.0.0.1:1/",
                                "--concurrency=3"});
    EXPECT_EQ(options.requests, 7u);
    EXPECT_EQ(options.url, (Url{"127.0.0.1", 1, "/"}));
    EXPECT_EQ(options.concurrency, 3u);
    EXPECT_EQ(options.timeout, std::chrono::seconds(1));
    EXPECT_TRUE(options.json);
}

TEST(UsageText, NamesTheStageItsOptionsAndItsOwnFlags) {
    bool value = false;
    StageInfo stage = stage_with_flag(&value);
    std::string text = usage_text(stage);
    EXPECT_THAT(text, StartsWith("usage: 07_test [N] [--url URL] [--concurrency C] "
                                 "[--timeout DURATION] [--json] [--trace FILE] [--one-at-a-time] "
                                 "[--help]\n"));
    EXPECT_THAT(text, HasSubstr(stage.summary));
    EXPECT_THAT(text, HasSubstr("poll one socket only, to show the difference"));
    EXPECT_THAT(text, HasSubstr("default http://127.0.0.1:8080/"));
    EXPECT_THAT(text, HasSubstr("Exit status"));
    EXPECT_THAT(text, HasSubstr("--trace FILE"));
    EXPECT_THAT(text, Not(HasSubstr("always sends one request at a time")));

    stage.one_at_a_time = true;
    EXPECT_THAT(usage_text(stage), HasSubstr("always sends one request at a time"));
}

TEST(UsageText, LeavesRefusedOptionsOutOfTheSynopsisAndSaysWhy) {
    std::string text = usage_text(stage_refusing_timeout_and_concurrency());
    EXPECT_THAT(text, StartsWith("usage: 07_test [N] [--url URL] [--json] [--trace FILE] [--help]\n"));
    EXPECT_THAT(text, Not(HasSubstr("--timeout DURATION")));
    EXPECT_THAT(text, Not(HasSubstr("--concurrency C")));
    EXPECT_THAT(text, HasSubstr("Not offered here: --concurrency, --timeout: "
                                "it has no timeouts and no limit.\n"));
    EXPECT_THAT(usage_text(plain_stage()), Not(HasSubstr("Not offered here")));
}

// ---- run_stage, with a fetch_all that answers from a script instead of the network ----

const Clock::time_point t0 = Clock::time_point{} + std::chrono::hours(1);

// What the fake fetch_all saw and how it answers.
struct FakeFetch {
    int calls = 0;
    std::vector<Request> requests;
    Options options;
    std::size_t fail_every = 0;  // request i fails when fail_every > 0 and i % fail_every == 0

    FetchAll function() {
        return [this](const std::vector<Request>& requests_in, const Options& options_in) {
            ++calls;
            requests = requests_in;
            options = options_in;
            std::vector<Result> results;
            for (std::size_t i = 0; i < requests_in.size(); ++i) {
                Result result;
                result.timing.start = t0 + milliseconds(10 * i);
                result.timing.done = t0 + milliseconds(10 * i + 5);
                if (fail_every > 0 && i % fail_every == 0) {
                    result.error = ErrorKind::connect;
                    result.error_message = "connect: Connection refused";
                } else {
                    result.response.status = 200;
                    result.response.body_bytes = 100;
                }
                if (options_in.on_result) {
                    options_in.on_result(i, result);
                }
                results.push_back(result);
            }
            return results;
        };
    }
};

struct Outcome {
    int status;
    std::string out;
    std::string err;
};

Outcome run(const StageInfo& stage, std::vector<std::string> args) {
    args.insert(args.begin(), stage.name);
    std::vector<char*> argv;
    for (std::string& arg : args) {
        argv.push_back(arg.data());
    }
    argv.push_back(nullptr);
    testing::internal::CaptureStdout();
    testing::internal::CaptureStderr();
    int status = run_stage(static_cast<int>(args.size()), argv.data(), stage);
    std::string out = testing::internal::GetCapturedStdout();
    std::string err = testing::internal::GetCapturedStderr();
    return {status, out, err};
}

StageInfo fake_stage(FakeFetch& fake) {
    StageInfo stage = plain_stage();
    stage.fetch_all = fake.function();
    return stage;
}

TEST(RunStage, PrintsOneReportLineAndExitsZeroWhenEveryRequestGotAResponse) {
    FakeFetch fake;
    Outcome result = run(fake_stage(fake), {"5"});
    EXPECT_EQ(result.status, 0);
    EXPECT_THAT(result.out, StartsWith("07_test: 5 requests to http://127.0.0.1:8080/ in "));
    EXPECT_THAT(result.out, HasSubstr("5 ok, 0 failed, 500 bytes, cpu "));
    EXPECT_THAT(result.out, HasSubstr("latency p50 5 ms p99 5 ms max 5 ms\n"));
    EXPECT_EQ(result.out.find('\n'), result.out.size() - 1) << "exactly one line";
    EXPECT_EQ(result.err, "");
}

TEST(RunStage, ExitsOneAndCountsErrorsOnStderrWhenSomeFailed) {
    FakeFetch fake;
    fake.fail_every = 2;
    Outcome result = run(fake_stage(fake), {"5"});
    EXPECT_EQ(result.status, 1);
    EXPECT_THAT(result.out, HasSubstr("2 ok, 3 failed, 200 bytes"));
    EXPECT_EQ(result.err, "     3 x connect: Connection refused\n");
}

TEST(RunStage, JsonPrintsExactlyOneObjectOnStdout) {
    FakeFetch fake;
    fake.fail_every = 4;
    Outcome result = run(fake_stage(fake), {"8", "--json"});
    EXPECT_EQ(result.status, 1);
    ASSERT_TRUE(result.out.ends_with("}\n"));
    EXPECT_EQ(result.out.find('\n'), result.out.size() - 1) << "one line";
    Json json = parse_json(result.out);
    ASSERT_EQ(json.type, Json::Type::object);
    EXPECT_EQ(json.keys, (std::vector<std::string>{"stage", "url", "requests", "ok", "failed",
                                                     "bytes", "wall_s", "cpu_s", "max_rss_kb",
                                                     "concurrency", "latency_ms", "errors"}));
    EXPECT_EQ(json.at("stage").string, "07_test");
    EXPECT_EQ(json.at("url").string, "http://127.0.0.1:8080/");
    EXPECT_EQ(json.at("requests").number, 8);
    EXPECT_EQ(json.at("ok").number, 6);
    EXPECT_EQ(json.at("failed").number, 2);
    EXPECT_EQ(json.at("bytes").number, 600);
    EXPECT_EQ(json.at("concurrency").number, 1);  // the fake's intervals never overlap
    EXPECT_EQ(json.at("latency_ms").at("p50").number, 5);
    EXPECT_EQ(json.at("errors").keys, std::vector<std::string>{"connect"});
    EXPECT_EQ(json.at("errors").at("connect").number, 2);
    EXPECT_GE(json.at("wall_s").number, 0);
    EXPECT_GT(json.at("max_rss_kb").number, 0);
    // The messages still go to stderr, where they do not disturb the JSON.
    EXPECT_EQ(result.err, "     2 x connect: Connection refused\n");
}

TEST(RunStage, PassesRequestsAndOptionsToFetchAll) {
    FakeFetch fake;
    Outcome result = run(fake_stage(fake),
                     {"3", "--url", "http://127.0.0.1:8081/p", "--concurrency", "2", "--timeout",
                      "750ms"});
    EXPECT_EQ(result.status, 0);
    ASSERT_EQ(fake.calls, 1);
    ASSERT_EQ(fake.requests.size(), 3u);
    for (const Request& request : fake.requests) {
        EXPECT_EQ(request.url, (Url{"127.0.0.1", 8081, "/p"}));
        ASSERT_EQ(request.addresses.size(), 1u);
        EXPECT_EQ(request.addresses[0].to_string(), "127.0.0.1:8081");
    }
    EXPECT_EQ(fake.options.concurrency, 2u);
    EXPECT_EQ(fake.options.timeout, milliseconds(750));
    EXPECT_EQ(fake.options.body_cap, 0u);
    EXPECT_TRUE(fake.options.on_result);
}

// The report names the URL as it was sent: with the bytes a request target may not hold encoded.
TEST(RunStage, SendsAndReportsTheUrlWithNonAsciiBytesPercentEncoded) {
    FakeFetch fake;
    Outcome result =
        run(fake_stage(fake), {"1", "--json", "--url", "http://127.0.0.1:8081/caf\xC3\xA9"});
    EXPECT_EQ(result.status, 0);
    ASSERT_EQ(fake.requests.size(), 1u);
    EXPECT_EQ(fake.requests[0].url.target, "/caf%C3%A9");
    EXPECT_EQ(parse_json(result.out).at("url").string, "http://127.0.0.1:8081/caf%C3%A9");
}

TEST(RunStage, ResolvesIpv6Literals) {
    FakeFetch fake;
    Outcome result = run(fake_stage(fake), {"1", "--url", "http://[::1]:8080/"});
    EXPECT_EQ(result.status, 0);
    ASSERT_EQ(fake.requests.size(), 1u);
    ASSERT_EQ(fake.requests[0].addresses.size(), 1u);
    EXPECT_EQ(fake.requests[0].addresses[0].to_string(), "[::1]:8080");
    EXPECT_THAT(result.out, HasSubstr("1 request to http://[::1]:8080/"));
}

TEST(RunStage, DefaultConcurrencyIsAllAtOnce) {
    FakeFetch fake;
    run(fake_stage(fake), {"4"});
    EXPECT_EQ(fake.options.concurrency, 0u);
    EXPECT_EQ(fake.options.timeout, std::chrono::seconds(10));
}

TEST(RunStage, AOneAtATimeStageAcceptsConcurrencyButRunsOneAtATime) {
    FakeFetch fake;
    StageInfo stage = fake_stage(fake);
    stage.one_at_a_time = true;
    Outcome result = run(stage, {"4", "--concurrency", "50"});
    EXPECT_EQ(result.status, 0);
    EXPECT_EQ(fake.options.concurrency, 1u);
}

TEST(RunStage, ZeroRequestsSendNothingAndStillReport) {
    FakeFetch fake;
    Outcome result = run(fake_stage(fake), {"0"});
    EXPECT_EQ(result.status, 0);
    EXPECT_TRUE(fake.requests.empty());
    EXPECT_THAT(result.out, StartsWith("07_test: 0 requests to http://127.0.0.1:8080/ in "));
    EXPECT_THAT(result.out, HasSubstr("0 ok, 0 failed, 0 bytes"));
    EXPECT_THAT(result.out, HasSubstr("latency -"));
}

TEST(RunStage, BadUsageExitsTwoWithoutFetching) {
    FakeFetch fake;
    Outcome result = run(fake_stage(fake), {"-3"});
    EXPECT_EQ(result.status, 2);
    EXPECT_EQ(fake.calls, 0);
    EXPECT_EQ(result.out, "");
    EXPECT_EQ(result.err,
              "07_test: N must be a whole number >= 0, not '-3'\ntry '07_test --help'\n");
}

TEST(RunStage, ARefusedOptionIsBadUsage) {
    FakeFetch fake;
    StageInfo stage = stage_refusing_timeout_and_concurrency();
    stage.fetch_all = fake.function();
    Outcome result = run(stage, {"5", "--timeout", "1s"});
    EXPECT_EQ(result.status, 2);
    EXPECT_EQ(fake.calls, 0);
    EXPECT_EQ(result.out, "");
    EXPECT_EQ(result.err, "07_test: option --timeout is not offered by 07_test: it has no timeouts "
                          "and no limit\ntry '07_test --help'\n");
}

TEST(RunStage, ABadUrlIsBadUsage) {
    FakeFetch fake;
    Outcome result = run(fake_stage(fake), {"--url", "https://127.0.0.1/"});
    EXPECT_EQ(result.status, 2);
    EXPECT_EQ(fake.calls, 0);
    EXPECT_THAT(result.err, StartsWith("07_test: --url: "));
}

TEST(RunStage, HelpPrintsUsageAndExitsZeroWithoutFetching) {
    FakeFetch fake;
    StageInfo stage = fake_stage(fake);
    Outcome result = run(stage, {"5", "--help"});
    EXPECT_EQ(result.status, 0);
    EXPECT_EQ(fake.calls, 0);
    EXPECT_EQ(result.out, usage_text(stage));
    EXPECT_EQ(result.err, "");
}

TEST(RunStage, AFailedResolveFailsEveryRequestWithoutFetching) {
    FakeFetch fake;
    // An empty label ("..") is refused by the resolver library itself, so no query leaves the
    // machine; and .invalid never resolves anyway.
    Outcome result = run(fake_stage(fake), {"3", "--url", "http://name..invalid/", "--json"});
    EXPECT_EQ(result.status, 1);
    EXPECT_EQ(fake.calls, 0);
    Json json = parse_json(result.out);
    EXPECT_EQ(json.at("failed").number, 3);
    EXPECT_EQ(json.at("errors").at("resolve").number, 3);
    EXPECT_EQ(json.at("concurrency").number, 0);
    EXPECT_EQ(json.at("latency_ms").at("p50").type, Json::Type::null);
    EXPECT_THAT(result.err, StartsWith("     3 x resolve: "));
}

TEST(RunStage, AFetchAllThatLosesResultsIsAnInternalError) {
    StageInfo stage = plain_stage();
    stage.fetch_all = [](const std::vector<Request>& requests, const Options&) {
        return std::vector<Result>(requests.size() - 1);
    };
    Outcome result = run(stage, {"4"});
    EXPECT_EQ(result.status, 1);
    EXPECT_EQ(result.out, "");
    EXPECT_THAT(result.err, HasSubstr("internal error: fetch_all returned 3 results for 4 requests"));
}

TEST(RunStage, AFetchAllThatSkipsOnResultIsAnInternalError) {
    StageInfo stage = plain_stage();
    stage.fetch_all = [](const std::vector<Request>& requests, const Options&) {
        return std::vector<Result>(requests.size());
    };
    Outcome result = run(stage, {"4"});
    EXPECT_EQ(result.status, 1);
    EXPECT_THAT(result.err, HasSubstr("internal error: on_result was called for 0 of 4 requests"));
}

TEST(RunStage, AFetchAllThatReportsARequestTwiceIsAnInternalError) {
    StageInfo stage = plain_stage();
    stage.fetch_all = [](const std::vector<Request>& requests, const Options& options) {
        std::vector<Result> results(requests.size());
        for (std::size_t i = 0; i < results.size(); ++i) {
            options.on_result(i, results[i]);
        }
        options.on_result(0, results[0]);
        return results;
    };
    Outcome result = run(stage, {"2"});
    EXPECT_EQ(result.status, 1);
    EXPECT_THAT(result.err, HasSubstr("internal error: on_result was called twice for request 0"));
}

TEST(RunStage, AFetchAllThatThrowsIsAnInternalError) {
    StageInfo stage = plain_stage();
    stage.fetch_all = [](const std::vector<Request>&, const Options&) -> std::vector<Result> {
        throw std::runtime_error("out of threads");
    };
    Outcome result = run(stage, {"2"});
    EXPECT_EQ(result.status, 1);
    EXPECT_EQ(result.out, "");
    EXPECT_THAT(result.err, HasSubstr("internal error: fetch_all threw: out of threads"));
}

// epoll_create1 with no descriptor left, after one request has finished: the run ran out of
// something, so each request without a result fails with `limit`, and the finished one keeps its.
TEST(RunStage, AFetchAllThatThrowsALimitFailsTheUnfinishedRequestsWithLimit) {
    StageInfo stage = plain_stage();
    stage.fetch_all = [](const std::vector<Request>&, const Options& options) -> std::vector<Result> {
        Result first;
        first.response.status = 200;
        options.on_result(0, first);
        throw std::system_error(EMFILE, std::generic_category(), "epoll_create1");
    };
    Outcome result = run(stage, {"3", "--json"});
    EXPECT_EQ(result.status, 1);
    Json json = parse_json(result.out);
    EXPECT_EQ(json.at("ok").number, 1);
    EXPECT_EQ(json.at("errors").at("limit").number, 2);
    EXPECT_THAT(result.err, HasSubstr("07_test: epoll_create1: Too many open files: the 2 requests without a "
                                      "result fail with limit\n"));
    EXPECT_THAT(result.err, HasSubstr("     2 x epoll_create1: Too many open files\n"));
}

TEST(RunStage, AFetchAllThatThrowsASystemErrorThatIsNoLimitIsAnInternalError) {
    StageInfo stage = plain_stage();
    stage.fetch_all = [](const std::vector<Request>&, const Options&) -> std::vector<Result> {
        throw std::system_error(EBADF, std::generic_category(), "epoll_wait");
    };
    Outcome result = run(stage, {"2"});
    EXPECT_EQ(result.status, 1);
    EXPECT_EQ(result.out, "");
    EXPECT_THAT(result.err, HasSubstr("internal error: fetch_all threw: epoll_wait: Bad file descriptor"));
}

// A fresh path in the test's temporary directory, removed when the test ends.
class TempPath {
public:
    explicit TempPath(const std::string& name)
        : path_(testing::TempDir() + "sixways_" + std::to_string(getpid()) + "_" + name) {
        std::remove(path_.c_str());
    }
    ~TempPath() { std::remove(path_.c_str()); }
    const std::string& path() const { return path_; }

private:
    std::string path_;
};

std::string read_file(const std::string& path) {
    std::string text;
    if (std::FILE* file = std::fopen(path.c_str(), "r")) {
        char buffer[4096];
        std::size_t n;
        while ((n = std::fread(buffer, 1, sizeof buffer, file)) > 0) {
            text.append(buffer, n);
        }
        std::fclose(file);
    }
    return text;
}

// The names of the "X" events in a trace file, in order.
std::vector<std::string> span_names(const std::string& trace_text) {
    std::vector<std::string> names;
    const Json trace = parse_json(trace_text);
    for (const Json& event : trace.at("traceEvents").items) {
        if (event.at("ph").string == "X") {
            names.push_back(event.at("name").string);
        }
    }
    return names;
}

TEST(RunStage, TraceWritesTheResolveAndEveryRequestToTheFile) {
    FakeFetch fake;
    fake.fail_every = 2;
    TempPath trace("trace.json");
    Outcome result = run(fake_stage(fake), {"3", "--json", "--trace", trace.path()});
    EXPECT_EQ(result.status, 1);
    EXPECT_NO_THROW(parse_json(result.out)) << "the report on stdout is unchanged";
    // The fake sets only start and done: the requests that failed end in their connect, and the
    // one that got a response has no phases it did not reach.
    EXPECT_EQ(span_names(read_file(trace.path())),
              (std::vector<std::string>{"resolve", "request 0", "connect", "request 1", "request 2",
                                        "connect"}));
}

// Runs the stage in a child whose stdout is a pipe nobody reads, with SIGPIPE at its default, as
// in `stage --trace t.json | head -c0`. Returns the signal that ended the child, or 0.
int run_with_broken_stdout(std::vector<std::string> args) {
    int out[2];
    if (pipe(out) != 0) {
        ADD_FAILURE() << "pipe";
        return 0;
    }
    std::fflush(stdout);
    std::fflush(stderr);
    pid_t child = fork();
    if (child == 0) {
        close(out[0]);
        dup2(out[1], STDOUT_FILENO);
        signal(SIGPIPE, SIG_DFL);
        FakeFetch fake;
        StageInfo stage = fake_stage(fake);
        args.insert(args.begin(), stage.name);
        std::vector<char*> argv;
        for (std::string& arg : args) {
            argv.push_back(arg.data());
        }
        argv.push_back(nullptr);
        run_stage(static_cast<int>(args.size()), argv.data(), stage);
        _exit(99);  // not reached: printing the report raises SIGPIPE
    }
    close(out[0]);
    close(out[1]);
    int status = 0;
    waitpid(child, &status, 0);
    return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

TEST(RunStage, ABrokenStdoutEndsTheRunBySigpipeAfterTheTraceIsWritten) {
    TempPath trace("trace.json");
    EXPECT_EQ(run_with_broken_stdout({"2", "--trace", trace.path()}), SIGPIPE);
    EXPECT_EQ(span_names(read_file(trace.path())),
              (std::vector<std::string>{"resolve", "request 0", "request 1"}));
}

TEST(RunStage, ATraceFileThatCannotBeCreatedIsBadUsageAndNothingIsSent) {
    FakeFetch fake;
    Outcome result = run(fake_stage(fake), {"3", "--trace", "/nonexistent-directory/trace.json"});
    EXPECT_EQ(result.status, 2);
    EXPECT_EQ(fake.calls, 0);
    EXPECT_EQ(result.out, "");
    EXPECT_EQ(result.err, "07_test: --trace '/nonexistent-directory/trace.json': fopen: No such "
                          "file or directory\n");
}

TEST(RunStage, LeavesInterruptSignalsUnblockedWhenItReturns) {
    FakeFetch fake;
    run(fake_stage(fake), {"2"});
    sigset_t mask;
    pthread_sigmask(SIG_SETMASK, nullptr, &mask);
    EXPECT_FALSE(sigismember(&mask, SIGINT));
    EXPECT_FALSE(sigismember(&mask, SIGTERM));
}

TEST(RunStage, FetchAllThreadsInheritBlockedInterruptSignals) {
    // Only the watcher may take SIGINT: a thread the stage starts must find it blocked.
    bool blocked_in_new_thread = false;
    StageInfo stage = plain_stage();
    stage.fetch_all = [&](const std::vector<Request>& requests, const Options& options) {
        std::thread worker([&] {
            sigset_t mask;
            pthread_sigmask(SIG_SETMASK, nullptr, &mask);
            blocked_in_new_thread = sigismember(&mask, SIGINT) && sigismember(&mask, SIGTERM);
        });
        worker.join();
        std::vector<Result> results(requests.size());
        for (std::size_t i = 0; i < results.size(); ++i) {
            options.on_result(i, results[i]);
        }
        return results;
    };
    EXPECT_EQ(run(stage, {"1"}).status, 0);
    EXPECT_TRUE(blocked_in_new_thread);
}

// ---- Ctrl-C: the partial report and exit status 130, tried in a child process ----

struct Interrupted {
    int exit_status = -1;
    int signal = 0;  // the signal that ended the child, if one did
    std::string out;
    std::string err;
};

std::string read_all(int fd) {
    std::string text;
    char buffer[4096];
    ssize_t n;
    while ((n = read(fd, buffer, sizeof buffer)) > 0) {
        text.append(buffer, static_cast<std::size_t>(n));
    }
    return text;
}

// Runs the stage in a child whose fetch_all finishes 2 of 5 requests (request 1 first, then 0; with
// second_fails, request 0 fails) and then waits; sends SIGINT once those 2 are reported. With
// broken_stdout, nobody reads the child's stdout by then, and SIGPIPE is at its default.
Interrupted interrupt_after_two_of_five(std::vector<std::string> extra_args,
                                        bool second_fails = false, bool broken_stdout = false) {
    int ready[2], out[2], err[2];
    if (pipe(ready) != 0 || pipe(out) != 0 || pipe(err) != 0) {
        ADD_FAILURE() << "pipe";
        return {};
    }
    std::fflush(stdout);
    std::fflush(stderr);
    pid_t child = fork();
    if (child == 0) {
        dup2(out[1], STDOUT_FILENO);
        dup2(err[1], STDERR_FILENO);
        close(ready[0]);
        close(out[0]);
        close(err[0]);
        if (broken_stdout) {
            signal(SIGPIPE, SIG_DFL);
        }
        StageInfo stage = plain_stage();
        stage.fetch_all = [&](const std::vector<Request>& requests, const Options& options) {
            for (std::size_t i : {1, 0}) {
                Result result;
                result.timing.start = t0;
                result.timing.done = t0 + milliseconds(20);
                if (i == 0 && second_fails) {
                    result.error = ErrorKind::receive;
                    result.error_message = "recv: Connection reset by peer";
                } else {
                    result.response.status = 200;
                    result.response.body_bytes = 100;
                }
                options.on_result(i, result);
            }
            if (write(ready[1], "r", 1) != 1) {
                _exit(98);
            }
            // Wait for the signal; bounded, so a broken watcher cannot hang the test.
            std::this_thread::sleep_for(std::chrono::seconds(5));
            return std::vector<Result>(requests.size());
        };
        std::vector<std::string> args = {"07_test", "5"};
        args.insert(args.end(), extra_args.begin(), extra_args.end());
        std::vector<char*> argv;
        for (std::string& arg : args) {
            argv.push_back(arg.data());
        }
        argv.push_back(nullptr);
        run_stage(static_cast<int>(args.size()), argv.data(), stage);
        _exit(99);  // not reached when the watcher handles the signal
    }
    close(ready[1]);
    close(out[1]);
    close(err[1]);
    pollfd wait_ready{ready[0], POLLIN, 0};
    bool got_ready = poll(&wait_ready, 1, 5000) == 1;
    EXPECT_TRUE(got_ready) << "the child never reported its first results";
    if (broken_stdout) {
        close(out[0]);
    }
    kill(child, SIGINT);
    Interrupted result;
    if (!broken_stdout) {
        result.out = read_all(out[0]);
    }
    result.err = read_all(err[0]);
    int status = 0;
    waitpid(child, &status, 0);
    result.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    result.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    close(ready[0]);
    if (!broken_stdout) {
        close(out[0]);
    }
    close(err[0]);
    return result;
}

TEST(RunStage, CtrlCPrintsThePartialReportAndExits130) {
    Interrupted result = interrupt_after_two_of_five({});
    EXPECT_EQ(result.exit_status, 130);
    EXPECT_THAT(result.out, StartsWith("07_test: 5 requests to http://127.0.0.1:8080/ in "));
    EXPECT_THAT(result.out, HasSubstr("2 ok, 0 failed, 3 unfinished, 200 bytes"));
    EXPECT_THAT(result.out, HasSubstr("latency p50 20 ms"));
    EXPECT_EQ(result.out.find('\n'), result.out.size() - 1);
    EXPECT_EQ(result.err, "");  // nothing failed, and no progress line outside a terminal
}

TEST(RunStage, CtrlCReportsTheFailuresAmongTheFinishedWithTheirMessages) {
    TempPath trace("partial.json");
    Interrupted result = interrupt_after_two_of_five({"--trace", trace.path()}, /*second_fails=*/true);
    EXPECT_EQ(result.exit_status, 130);
    EXPECT_THAT(result.out, HasSubstr("1 ok, 1 failed, 3 unfinished, 100 bytes"));
    EXPECT_THAT(result.err, HasSubstr("1 x recv: Connection reset by peer"));
    EXPECT_THAT(read_file(trace.path()), HasSubstr("\"error\":\"recv: Connection reset by peer\""));
}

TEST(RunStage, CtrlCWithJsonPrintsOnePartialJsonObject) {
    Interrupted result = interrupt_after_two_of_five({"--json"});
    EXPECT_EQ(result.exit_status, 130);
    Json json = parse_json(result.out);
    EXPECT_EQ(json.at("requests").number, 5);
    EXPECT_EQ(json.at("ok").number, 2);
    EXPECT_EQ(json.at("unfinished").number, 3);
    EXPECT_EQ(json.at("concurrency").number, 2);
}

TEST(RunStage, CtrlCWithTraceWritesTheRequestsThatFinished) {
    TempPath trace("partial.json");
    Interrupted result = interrupt_after_two_of_five({"--trace", trace.path()});
    EXPECT_EQ(result.exit_status, 130);
    EXPECT_EQ(span_names(read_file(trace.path())),
              (std::vector<std::string>{"resolve", "request 0", "request 1"}));
}

TEST(RunStage, CtrlCWithABrokenStdoutStillWritesTheTrace) {
    TempPath trace("partial.json");
    Interrupted result = interrupt_after_two_of_five({"--trace", trace.path()},
                                                     /*second_fails=*/false, /*broken_stdout=*/true);
    EXPECT_EQ(result.signal, SIGPIPE);
    EXPECT_EQ(span_names(read_file(trace.path())),
              (std::vector<std::string>{"resolve", "request 0", "request 1"}));
}

}  // namespace
}  // namespace sixways
