// Stage 01's own tests: one request at a time, and a deadline that bounds every blocking call.
// What every stage must do is checked by the conformance suite, joined at the bottom of this file.
#include "01_blocking/fetch.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "lab/labserver.hpp"
#include "tests/conformance.hpp"
#include "tests/support/stage_support.hpp"

namespace {

using namespace std::chrono_literals;
using namespace sixways::testing_support;  // request_for, on_loopback, FullBacklog, ...
using sixways::Clock;
using sixways::ErrorKind;
using sixways::Options;
using sixways::Request;
using sixways::Result;
using sixways::blocking::fetch_all;

TEST(Blocking, FetchesOneRequestAtATimeInOrderEvenWhenAskedForMore) {
    sixways::lab::LabServer server(on_loopback(20ms));
    server.start();
    std::vector<Request> requests;
    for (int k = 0; k < 5; ++k) requests.push_back(request_for(server.url("/one/" + std::to_string(k))));
    Options options = with_timeout(5s);
    options.concurrency = 5;
    std::vector<std::size_t> reported;
    const std::thread::id caller = std::this_thread::get_id();
    options.on_result = [&](std::size_t index, const Result& result) {
        EXPECT_EQ(std::this_thread::get_id(), caller);
        EXPECT_TRUE(result.ok()) << result.error_message;
        reported.push_back(index);
    };
    const std::vector<Result> results = fetch_all(requests, options);

    ASSERT_EQ(results.size(), requests.size());
    EXPECT_EQ(reported, (std::vector<std::size_t>{0, 1, 2, 3, 4}));
    EXPECT_EQ(most_in_flight(results), 1u);
    for (std::size_t k = 0; k < results.size(); ++k) {
        EXPECT_NE(results[k].response.body.find("/one/" + std::to_string(k)), std::string::npos)
            << results[k].response.body;
    }
}

TEST(Blocking, StopsAServerThatTricklesBytesAtTheRequestsDeadline) {
    EndlessTrickle server;
    const std::vector<Result> results = fetch_all({request_for(server.url())}, with_timeout(300ms));
    ASSERT_EQ(results.size(), 1u);
    EXPECT_EQ(results[0].error, ErrorKind::timeout);
    EXPECT_EQ(results[0].error_message, "timeout after 300 ms while receiving");
    EXPECT_NE(results[0].timing.first_byte, Clock::time_point{});  // bytes did arrive
}

TEST(Blocking, StopsAServerThatNeverAnswersAtTheDeadline) {
    sixways::lab::LabServer server(on_loopback(0ms));
    server.start();
    const std::vector<Result> results =
        fetch_all({request_for(server.url("/fault/hang"))}, with_timeout(200ms));
    ASSERT_EQ(results.size(), 1u);
    EXPECT_EQ(results[0].error, ErrorKind::timeout);
    EXPECT_EQ(results[0].error_message, "timeout after 200 ms while waiting");
}

TEST(Blocking, GivesUpAConnectThatHangsAtTheDeadline) {
    FullBacklog server;
    const std::vector<Result> results = fetch_all({request_for(server.url())}, with_timeout(300ms));
    ASSERT_EQ(results.size(), 1u);
    EXPECT_EQ(results[0].error, ErrorKind::timeout);
    EXPECT_EQ(results[0].error_message, "timeout after 300 ms while connecting");
    EXPECT_EQ(results[0].timing.connected, Clock::time_point{});
}

TEST(Blocking, FailsARequestThatFindsNoDescriptorWithLimitAndGoesOn) {
    sixways::lab::LabServer server(on_loopback(0ms));
    server.start();
    const std::vector<Request> requests = {request_for(server.url("/first")),
                                           request_for(server.url("/second"))};
    DescriptorsLeft no_descriptor_left(0);
    Options options = with_timeout(5s);
    // Descriptors come back once the first request has failed.
    options.on_result = [&](std::size_t, const Result&) { no_descriptor_left.restore(); };
    const std::vector<Result> results = fetch_all(requests, options);

    ASSERT_EQ(results.size(), 2u);
    EXPECT_EQ(results[0].error, ErrorKind::limit);
    EXPECT_EQ(results[0].error_message, "socket: Too many open files");
    EXPECT_TRUE(results[1].ok()) << results[1].error_message;
}

}  // namespace

namespace {
const StageUnderTest blocking{"01_blocking", &sixways::blocking::fetch_all, STAGE_BINARY, true};
}  // namespace

INSTANTIATE_TEST_SUITE_P(Blocking, ConformanceCore, testing::Values(blocking), StageName());
INSTANTIATE_TEST_SUITE_P(Blocking, Conformance, testing::Values(blocking), StageName());
