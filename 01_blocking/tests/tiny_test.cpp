// 01_tiny: the core and the tiny level of the conformance suite (tests/conformance_core.cpp,
// tests/conformance_tiny.cpp), then what only this tiny version has to show. Tiny has no deadline,
// so it is never sent anything that would make it wait for ever (no /fault/hang, no /fault/stall,
// no silent peer).
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "01_blocking/tiny.hpp"
#include "lab/labserver.hpp"
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

}  // namespace
}  // namespace sixways::blocking::tiny

const StageUnderTest blocking_tiny{"01_tiny", &sixways::blocking::tiny::fetch_all, STAGE_BINARY, true,
                                   "01_blocking"};
INSTANTIATE_TEST_SUITE_P(BlockingTiny, ConformanceCore, testing::Values(blocking_tiny), StageName());
INSTANTIATE_TEST_SUITE_P(BlockingTiny, ConformanceTiny, testing::Values(blocking_tiny), StageName());
