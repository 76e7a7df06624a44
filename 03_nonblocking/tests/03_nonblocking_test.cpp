// Stage 03's own tests: the busy loop with its concurrency limit, deadlines kept without any call
// that waits, and the one-at-a-time variant. What every stage must do is checked by the
// conformance suite, joined at the bottom of this file for both ways of running the stage.
#include "03_nonblocking/fetch.hpp"

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
using sixways::nonblocking::fetch_all;
using sixways::nonblocking::fetch_all_one_at_a_time;

TEST(NonBlocking, RunsEveryRequestAtOnceOnTheCallingThread) {
    sixways::lab::LabServer server(on_loopback(50ms));
    server.start();
    const std::vector<Request> requests = numbered_requests(server, 30);
    const std::thread::id caller = std::this_thread::get_id();
    std::vector<int> deliveries(requests.size(), 0);
    Options options = with_timeout(10s);
    options.on_result = [&](std::size_t index, const Result&) {
        EXPECT_EQ(std::this_thread::get_id(), caller);
        ++deliveries.at(index);
    };
    const std::vector<Result> results = fetch_all(requests, options);

    ASSERT_EQ(results.size(), requests.size());
    expect_each_numbered_body(results);
    EXPECT_EQ(deliveries, std::vector<int>(requests.size(), 1));
    EXPECT_GT(most_in_flight(results), 1u);
}

TEST(NonBlocking, KeepsAtMostCRequestsInFlight) {
    sixways::lab::LabServer server(on_loopback(50ms));
    server.start();
    const std::vector<Request> requests = numbered_requests(server, 24);
    Options options = with_timeout(10s);
    options.concurrency = 4;
    const std::vector<Result> results = fetch_all(requests, options);

    ASSERT_EQ(results.size(), requests.size());
    expect_each_numbered_body(results);
    EXPECT_LE(most_in_flight(results), 4u);
    EXPECT_GT(most_in_flight(results), 1u);
}

// A body starts by echoing the path and the request's number since the server started
// ("path=/x id=7"), which differs between two runs; the part before " id=" must not.
std::string echoed_path(const std::string& body) { return body.substr(0, body.find(" id=")); }

// The naive variant must differ only in having one request in flight at a time.
TEST(NonBlocking, OneAtATimeGivesTheSameResultsAsTheDefaultOneAfterAnother) {
    sixways::lab::LabServer server(on_loopback(20ms));
    server.start();
    const std::vector<std::string> paths = {
        "/same/0",        "/same/1",           "/chunked/3000",     "/status/404",
        "/fault/reset",   "/fault/bad-status", "/fault/keep-open",  "/fault/hang",
        "/fault/close",   "/same/2",
    };
    std::vector<Request> requests;
    for (const std::string& path : paths) requests.push_back(request_for(server.url(path)));
    const Options options = with_timeout(500ms);
    const std::vector<Result> all_at_once = fetch_all(requests, options);
    const std::vector<Result> one_at_a_time = fetch_all_one_at_a_time(requests, options);

    ASSERT_EQ(all_at_once.size(), paths.size());
    ASSERT_EQ(one_at_a_time.size(), paths.size());
    for (std::size_t k = 0; k < paths.size(); ++k) {
        SCOPED_TRACE(paths[k]);
        EXPECT_EQ(one_at_a_time[k].error, all_at_once[k].error);
        EXPECT_EQ(one_at_a_time[k].error_message, all_at_once[k].error_message);
        EXPECT_EQ(one_at_a_time[k].response.status, all_at_once[k].response.status);
        EXPECT_EQ(echoed_path(one_at_a_time[k].response.body),
                  echoed_path(all_at_once[k].response.body));
    }
    EXPECT_TRUE(one_at_a_time[0].ok()) << one_at_a_time[0].error_message;
    EXPECT_EQ(one_at_a_time[7].error, ErrorKind::timeout);
    EXPECT_EQ(most_in_flight(one_at_a_time), 1u);
    EXPECT_GT(most_in_flight(all_at_once), 1u);
}

TEST(NonBlocking, StopsAServerThatTricklesBytesAtTheRequestsDeadline) {
    for (auto fetch : {&fetch_all, &fetch_all_one_at_a_time}) {
        EndlessTrickle server;
        const std::vector<Result> results = fetch({request_for(server.url())}, with_timeout(300ms));
        ASSERT_EQ(results.size(), 1u);
        EXPECT_EQ(results[0].error, ErrorKind::timeout);
        EXPECT_EQ(results[0].error_message, "timeout after 300 ms while receiving");
        EXPECT_NE(results[0].timing.first_byte, Clock::time_point{});  // bytes did arrive
    }
}

TEST(NonBlocking, GivesUpAHandshakeThatHangsAtTheDeadline) {
    for (auto fetch : {&fetch_all, &fetch_all_one_at_a_time}) {
        FullBacklog server;
        const std::vector<Result> results = fetch({request_for(server.url())}, with_timeout(300ms));
        ASSERT_EQ(results.size(), 1u);
        EXPECT_EQ(results[0].error, ErrorKind::timeout);
        EXPECT_EQ(results[0].error_message, "timeout after 300 ms while connecting");
        EXPECT_EQ(results[0].timing.connected, Clock::time_point{});
    }
}

TEST(NonBlocking, FailsARequestThatFindsNoDescriptorWithLimitAndGoesOn) {
    sixways::lab::LabServer server(on_loopback(0ms));
    server.start();
    const std::vector<Request> requests = {request_for(server.url("/first")),
                                           request_for(server.url("/second"))};
    DescriptorsLeft no_descriptor_left(0);
    Options options = with_timeout(5s);
    options.concurrency = 1;  // so the second request starts after the first has failed
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
const StageUnderTest nonblocking{"03_nonblocking", &sixways::nonblocking::fetch_all, STAGE_BINARY};
// The naive variant keeps the same contract; its binary is not run (it would run the default).
const StageUnderTest one_at_a_time{"03_nonblocking_one_at_a_time",
                                   &sixways::nonblocking::fetch_all_one_at_a_time, ""};
}  // namespace

INSTANTIATE_TEST_SUITE_P(NonBlocking, ConformanceCore, testing::Values(nonblocking), StageName());
INSTANTIATE_TEST_SUITE_P(NonBlocking, Conformance, testing::Values(nonblocking), StageName());
INSTANTIATE_TEST_SUITE_P(NonBlockingOneAtATime, ConformanceCore, testing::Values(one_at_a_time),
                         StageName());
INSTANTIATE_TEST_SUITE_P(NonBlockingOneAtATime, Conformance, testing::Values(one_at_a_time),
                         StageName());
