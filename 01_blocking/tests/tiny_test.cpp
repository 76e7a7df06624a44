// 01_tiny: the core of the conformance suite (tests/conformance_core.cpp), then what only tiny has
// to show. Tiny has no deadline, so it is never sent anything that would make it wait for ever (no
// /fault/hang, no /fault/stall, no silent peer).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "01_blocking/tiny.hpp"
#include "common/json_reader.hpp"
#include "lab/labserver.hpp"
#include "tests/child_process.hpp"
#include "tests/conformance.hpp"
#include "tests/support/stage_support.hpp"

namespace sixways::blocking::tiny {
namespace {

using namespace std::chrono_literals;
using lab::LabServer;
using testing_support::expect_each_numbered_body;
using testing_support::most_in_flight;
using testing_support::numbered_requests;
using testing_support::on_loopback;
using testing_support::open_descriptors;
using testing_support::request_for;
using testing_support::SilentServer;

std::vector<Result> fetch(const std::vector<Request>& requests, const Options& options = {}) {
    const testing_support::Watchdog watchdog("01_tiny's fetch_all", 60s);
    return fetch_all(requests, options);
}

// ---- fetch_all ----

TEST(BlockingTinyFetchAll, SendsOneRequestAfterAnotherAndRecordsEachPhaseInOrder) {
    LabServer server(on_loopback(20ms));
    server.start();
    const std::vector<Request> requests = numbered_requests(server, 5);
    std::vector<std::size_t> told;
    Options options;
    options.on_result = [&told](std::size_t index, const Result&) { told.push_back(index); };

    const std::vector<Result> results = fetch(requests, options);

    ASSERT_EQ(results.size(), requests.size());
    expect_each_numbered_body(results);
    EXPECT_EQ(most_in_flight(results), 1u);
    EXPECT_EQ(told, (std::vector<std::size_t>{0, 1, 2, 3, 4})) << "on_result, as each one ends";
    for (const Result& result : results) {
        const Timing& timing = result.timing;
        EXPECT_NE(timing.start, Clock::time_point{});
        EXPECT_LE(timing.start, timing.connected);
        EXPECT_LE(timing.connected, timing.sent);
        EXPECT_LE(timing.sent, timing.first_byte);
        EXPECT_LE(timing.first_byte, timing.done);
    }
}

TEST(BlockingTinyFetchAll, ClosesEverySocketWhateverTheEnding) {
    const int before = open_descriptors();
    {
        LabServer server(on_loopback(0ms));
        server.start();
        const std::vector<Request> requests = {
            request_for(server.url("/fault/reset")),      request_for(server.url("/fault/close")),
            request_for(server.url("/fault/bad-status")), request_for(server.url("/fault/keep-open")),
            request_for(SilentServer().url()),            request_for(server.url("/ok")),
        };

        const std::vector<Result> results = fetch(requests);

        ASSERT_EQ(results.size(), requests.size());
        EXPECT_FALSE(results[0].ok());
        EXPECT_FALSE(results[1].ok());
        EXPECT_FALSE(results[2].ok());
        EXPECT_TRUE(results[3].ok()) << results[3].error_message;
        EXPECT_FALSE(results[4].ok()) << "refused";
        EXPECT_TRUE(results[5].ok()) << results[5].error_message;
    }
    EXPECT_EQ(open_descriptors(), before);
}

// ---- the binary ----

conformance::ChildOutput run_tiny(const std::vector<std::string>& args) {
    return conformance::run_program(STAGE_BINARY, args, 20s);
}

// How many spans of a --trace file there are of each phase ("connect", "send", "wait",
// "receive"), and of whole requests ("request").
std::map<std::string, int> spans_in_trace(const std::string& path) {
    std::ifstream file(path);
    std::stringstream text;
    text << file.rdbuf();
    const Json trace = parse_json(text.str());
    std::map<std::string, int> count;
    for (const Json& event : trace.at("traceEvents").items) {
        const Json* category = event.find("cat");
        if (category == nullptr || category->string == "resolve") continue;
        ++count[category->string == "phase" ? event.at("name").string : category->string];
    }
    return count;
}

TEST(BlockingTinyBinary, ReportsLatencyAndTracesEveryPhaseOfEveryRequest) {
    LabServer server(on_loopback(20ms));
    server.start();
    const std::string trace = ::testing::TempDir() + "01_tiny_trace.json";
    const auto output = run_tiny({"3", "--url", server.url("/"), "--json", "--trace", trace});
    EXPECT_EQ(output.exit_status, 0) << output.err;
    const Json report = parse_json(output.out);
    EXPECT_EQ(report.at("stage").string, "01_tiny");
    EXPECT_EQ(report.at("ok").number, 3);
    EXPECT_GE(report.at("latency_ms").at("p50").number, 20) << "the server's delay at least";
    EXPECT_EQ(report.at("concurrency").number, 1) << "one request after another";
    const std::map<std::string, int> spans = spans_in_trace(trace);
    for (const char* name : {"request", "connect", "send", "wait", "receive"}) {
        EXPECT_EQ(spans.count(name) ? spans.at(name) : 0, 3) << name;
    }
    std::remove(trace.c_str());
}

TEST(BlockingTinyBinary, RefusesTimeoutAndConcurrencyAsBadUsageWithoutConnecting) {
    LabServer server(on_loopback(0ms));
    server.start();
    for (const std::vector<std::string>& options :
         {std::vector<std::string>{"--timeout", "2s"}, {"--timeout=500ms"}, {"--concurrency", "1"}}) {
        std::vector<std::string> args = {"3", "--url", server.url("/")};
        args.insert(args.end(), options.begin(), options.end());
        const auto output = run_tiny(args);
        EXPECT_EQ(output.exit_status, 2) << options[0];
        EXPECT_EQ(output.out, "");
        const std::string name = options[0].substr(0, options[0].find('='));
        EXPECT_NE(output.err.find(name + " is not offered by 01_tiny"), std::string::npos) << output.err;
        EXPECT_NE(output.err.find("01_blocking"), std::string::npos) << "points to the full stage: "
                                                                     << output.err;
    }
    EXPECT_EQ(server.stats().accepted, 0u) << "bad usage made a connection";
}

TEST(BlockingTinyBinary, HelpSaysItWaitsUntilCtrlCAndLeavesOutWhatItDoesNotOffer) {
    const auto output = run_tiny({"--help"});
    EXPECT_EQ(output.exit_status, 0) << output.err;
    EXPECT_EQ(output.out.rfind("usage: 01_tiny [N] [--url URL] [--json] [--trace FILE] [--help]\n", 0), 0u)
        << output.out;
    EXPECT_NE(output.out.find("waited for until Ctrl-C"), std::string::npos) << output.out;
    EXPECT_NE(output.out.find("Not offered here: --concurrency, --timeout"), std::string::npos)
        << output.out;
}

}  // namespace
}  // namespace sixways::blocking::tiny

INSTANTIATE_TEST_SUITE_P(BlockingTiny, ConformanceCore,
                         testing::Values(StageUnderTest{"01_tiny", &sixways::blocking::tiny::fetch_all, STAGE_BINARY}),
                         StageName());
