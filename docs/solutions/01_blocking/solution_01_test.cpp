// Tests for the answers to chapter 01's code exercises. Each test runs a lab server in-process on
// 127.0.0.1 and compares the exercise's version with stage 01 itself.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "01_blocking/fetch.hpp"
#include "common/http.hpp"
#include "lab/labserver.hpp"
#include "naive_fetch.hpp"
#include "run_budget.hpp"
#include "tests/support/stage_support.hpp"
#include "timeout_once.hpp"

namespace {

using namespace std::chrono_literals;
using namespace sixways::testing_support;  // request_for, on_loopback, with_timeout, Watchdog
using sixways::Clock;
using sixways::ErrorKind;
using sixways::Options;
using sixways::Request;
using sixways::ResponseParser;
using sixways::Result;

// ---- Exercise 2: the four lines of Python ----

TEST(Exercise2NaiveFetch, KeepsOnlyTheStartOfALargeResponse) {
    Watchdog watchdog("the naive fetch", 30s);
    sixways::lab::LabServer server(on_loopback(10ms));
    server.start();
    const Request request = request_for(server.url("/bytes/100000"));

    const std::string naive = sixways::exercise01::naive_fetch(request);
    EXPECT_LE(naive.size(), 1024u);
    EXPECT_EQ(naive.rfind("HTTP/1.1 200", 0), 0u) << naive;  // it did get the start of a response
    ResponseParser parser;
    EXPECT_EQ(parser.feed(naive), ResponseParser::Status::need_more)
        << "one recv() of at most 1024 bytes cannot hold a 100000-byte body";

    const std::vector<Result> results = sixways::blocking::fetch_all({request}, with_timeout(5s));
    ASSERT_EQ(results.size(), 1u);
    ASSERT_TRUE(results[0].ok()) << results[0].error_message;
    EXPECT_EQ(results[0].response.status, 200);
    EXPECT_EQ(results[0].response.body.size(), 100000u);
}

// ---- Exercise 4: a timeout set once bounds each call, not the request ----

TEST(Exercise4TimeoutOnce, LetsATrickleRunPastTheDeadlineThatStage01Keeps) {
    Watchdog watchdog("the trickle fetches", 30s);
    sixways::lab::LabServer server(on_loopback(10ms));
    server.start();
    const Request request = request_for(server.url("/fault/trickle"));  // one byte every 3 ms
    const Options options = with_timeout(200ms);                        // less than it takes

    const std::vector<Result> stage01 = sixways::blocking::fetch_all({request}, options);
    ASSERT_EQ(stage01.size(), 1u);
    EXPECT_EQ(stage01[0].error, ErrorKind::timeout);
    EXPECT_EQ(stage01[0].error_message, "timeout after 200 ms while receiving");

    const std::vector<Result> once =
        sixways::exercise01::timeout_once::fetch_all({request}, options);
    ASSERT_EQ(once.size(), 1u);
    EXPECT_TRUE(once[0].ok()) << "every recv() got a byte in time, so none timed out: "
                              << once[0].error_message;
    EXPECT_EQ(once[0].response.status, 200);
}

TEST(Exercise4TimeoutOnce, StillFetchesAPlainPath) {
    Watchdog watchdog("the plain fetch", 30s);
    sixways::lab::LabServer server(on_loopback(10ms));
    server.start();
    const std::vector<Result> results = sixways::exercise01::timeout_once::fetch_all(
        {request_for(server.url("/plain"))}, with_timeout(5s));
    ASSERT_EQ(results.size(), 1u);
    ASSERT_TRUE(results[0].ok()) << results[0].error_message;
    EXPECT_NE(results[0].response.body.find("/plain"), std::string::npos);
}

// ---- Exercise 5: a deadline for the whole run ----

TEST(Exercise5RunBudget, FailsTheRequestsThatFindTheRunsTimeSpentWithoutConnecting) {
    Watchdog watchdog("fetch_all_within", 30s);
    sixways::lab::LabServer server(on_loopback(10ms));
    server.start();
    // /fault/hang never answers.
    const std::vector<Request> requests(4, request_for(server.url("/fault/hang")));
    std::vector<std::size_t> reported;
    Options options = with_timeout(10s);  // each request alone would wait 10 s
    options.on_result = [&](std::size_t index, const Result&) { reported.push_back(index); };

    const std::vector<Result> results =
        sixways::exercise01::fetch_all_within(requests, options, 300ms);

    ASSERT_EQ(results.size(), 4u);
    EXPECT_EQ(reported, (std::vector<std::size_t>{0, 1, 2, 3}));
    // The first request waited for the answer until the run's time was spent...
    EXPECT_EQ(results[0].error, ErrorKind::timeout);
    EXPECT_NE(results[0].error_message.find("while waiting"), std::string::npos)
        << results[0].error_message;
    // ...and the others never started.
    for (std::size_t k = 1; k < results.size(); ++k) {
        EXPECT_EQ(results[k].error, ErrorKind::timeout) << k;
        EXPECT_EQ(results[k].error_message,
                  "timeout: the run's 300 ms were spent before this request started");
        EXPECT_EQ(results[k].timing.start, Clock::time_point{}) << k;
    }
    EXPECT_EQ(server.stats().accepted, 1u);  // one connection, not four
}

TEST(Exercise5RunBudget, ChangesNothingForARunThatFitsItsBudget) {
    Watchdog watchdog("fetch_all_within", 30s);
    sixways::lab::LabServer server(on_loopback(10ms));
    server.start();
    const std::vector<Request> requests = numbered_requests(server, 3);

    const std::vector<Result> results =
        sixways::exercise01::fetch_all_within(requests, with_timeout(5s), 20s);

    ASSERT_EQ(results.size(), 3u);
    expect_each_numbered_body(results);
    EXPECT_EQ(server.stats().accepted, 3u);
}

TEST(Exercise5RunBudget, WithNoBudgetConnectsNowhere) {
    Watchdog watchdog("fetch_all_within", 30s);
    sixways::lab::LabServer server(on_loopback(10ms));
    server.start();
    const std::vector<Result> results = sixways::exercise01::fetch_all_within(
        numbered_requests(server, 2), with_timeout(5s), 0s);

    ASSERT_EQ(results.size(), 2u);
    for (const Result& result : results) EXPECT_EQ(result.error, ErrorKind::timeout);
    EXPECT_EQ(server.stats().accepted, 0u);
}

}  // namespace
