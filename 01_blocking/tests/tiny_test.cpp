// 01_tiny: the core and the tiny level of the conformance suite (tests/conformance_core.cpp,
// tests/conformance_tiny.cpp), then what only this tiny version has to show. Tiny has no deadline,
// so it is never sent anything that would make it wait for ever (no /fault/hang, no /fault/stall,
// no silent peer).
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
using testing_support::request_for;

std::vector<Result> fetch(const std::vector<Request>& requests, const Options& options = {}) {
    const testing_support::Watchdog watchdog("01_tiny's fetch_all", 60s);
    return fetch_all(requests, options);
}

// ---- fetch_all ----

TEST(BlockingTinyFetchAll, SendsOneRequestAfterAnotherAndTellsOnResultAsEachEnds) {
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

}  // namespace
}  // namespace sixways::blocking::tiny

const StageUnderTest blocking_tiny{"01_tiny", &sixways::blocking::tiny::fetch_all, STAGE_BINARY, false,
                                   "01_blocking"};
INSTANTIATE_TEST_SUITE_P(BlockingTiny, ConformanceCore, testing::Values(blocking_tiny), StageName());
INSTANTIATE_TEST_SUITE_P(BlockingTiny, ConformanceTiny, testing::Values(blocking_tiny), StageName());
