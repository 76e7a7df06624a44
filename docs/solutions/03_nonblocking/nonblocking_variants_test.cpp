// Tests of chapter 03's exercises 5 (a nap between passes) and 6 (a std::vector of requests in
// flight), against the lab server and hand-made peers on loopback. They check behaviour: every
// request answered once with its own response, deadlines kept, no descriptor left open, and for
// the nap a bound on the number of passes that follows from sleeping, not from a measured time.
#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <set>
#include <string>
#include <vector>

#include "docs/solutions/03_nonblocking/napping_fetch.hpp"
#include "docs/solutions/03_nonblocking/vector_fetch.hpp"
#include "lab/labserver.hpp"
#include "tests/support/stage_support.hpp"

namespace {

using namespace std::chrono_literals;
using namespace sixways::testing_support;  // request_for, on_loopback, SilentServer, ...
using sixways::ErrorKind;
using sixways::Options;
using sixways::Request;
using sixways::Result;
using sixways::solutions::fetch_all_in_vector;
using sixways::solutions::fetch_all_napping;

TEST(Napping, AnswersEveryRequestWithItsOwnResponse) {
    const Watchdog watchdog("fetch_all_napping", 60s);
    sixways::lab::LabServer server(on_loopback(50ms));
    server.start();
    const std::vector<Request> requests = numbered_requests(server, 20);
    std::size_t passes = 0;
    const std::vector<Result> results =
        fetch_all_napping(requests, with_timeout(10s), 1ms, &passes);

    ASSERT_EQ(results.size(), requests.size());
    expect_each_numbered_body(results);
    EXPECT_GT(most_in_flight(results), 1u);
    EXPECT_GE(passes, 1u);
}

// A server that never answers, and a deadline of 100 ms: every pass after the first begins at least
// one nap (10 ms) after the one before it, so by the 11th pass the deadline has passed and every
// request has failed. A loop that did not nap would make thousands of passes in those 100 ms.
TEST(Napping, SleepsBetweenPassesSoThatADeadlineTakesFewPasses) {
    const Watchdog watchdog("fetch_all_napping", 60s);
    SilentServer silent;
    const std::vector<Request> requests(3, request_for(silent.url()));
    std::size_t passes = 0;
    const std::vector<Result> results =
        fetch_all_napping(requests, with_timeout(100ms), 10ms, &passes);

    ASSERT_EQ(results.size(), 3u);
    for (const Result& result : results) {
        EXPECT_EQ(result.error, ErrorKind::timeout) << result.error_message;
    }
    EXPECT_GE(passes, 1u);
    EXPECT_LE(passes, 11u);
}

TEST(Napping, KeepsAtMostCInFlight) {
    const Watchdog watchdog("fetch_all_napping", 60s);
    sixways::lab::LabServer server(on_loopback(20ms));
    server.start();
    const std::vector<Request> requests = numbered_requests(server, 12);
    const std::vector<Result> results = fetch_all_napping(requests, with_timeout(10s, 4), 1ms);

    ASSERT_EQ(results.size(), requests.size());
    expect_each_numbered_body(results);
    EXPECT_LE(most_in_flight(results), 4u);
}

TEST(InVector, AnswersEveryRequestWithItsOwnResponseWithAtMostCInFlight) {
    const Watchdog watchdog("fetch_all_in_vector", 60s);
    // Counted before the lab server starts and after it is gone: it runs in this process, and its
    // side of the last connections may still be open for a moment after fetch_all returns.
    const int descriptors_before = open_descriptors();
    {
        sixways::lab::LabServer server(on_loopback(20ms));
        server.start();
        const std::vector<Request> requests = numbered_requests(server, 30);
        std::multiset<std::size_t> delivered;
        Options options = with_timeout(10s, 7);
        options.on_result = [&](std::size_t index, const Result&) { delivered.insert(index); };

        const std::vector<Result> results = fetch_all_in_vector(requests, options);

        ASSERT_EQ(results.size(), requests.size());
        expect_each_numbered_body(results);
        EXPECT_LE(most_in_flight(results), 7u);
        EXPECT_GT(most_in_flight(results), 1u);
        ASSERT_EQ(delivered.size(), requests.size());
        for (std::size_t k = 0; k < requests.size(); ++k) EXPECT_EQ(delivered.count(k), 1u) << k;
    }
    EXPECT_EQ(open_descriptors(), descriptors_before);
}

// Requests that fail at once (a refused port), fail at their deadline (a silent server) and succeed
// are mixed, so that finished requests leave the vector from its front, middle and end.
TEST(InVector, GivesEachRequestItsOwnResultWhenSomeFail) {
    const Watchdog watchdog("fetch_all_in_vector", 60s);
    sixways::lab::LabServer server(on_loopback(0ms));
    server.start();
    SilentServer silent;
    std::string refused_url;
    {
        const SilentServer closed;  // destroyed at once: its port now refuses connections
        refused_url = closed.url();
    }
    std::vector<Request> requests;
    for (int k = 0; k < 12; ++k) {
        if (k % 3 == 0) {
            requests.push_back(request_for(refused_url));
        } else if (k % 3 == 1) {
            requests.push_back(request_for(silent.url()));
        } else {
            requests.push_back(request_for(server.url("/numbered/" + std::to_string(k))));
        }
    }
    const std::vector<Result> results = fetch_all_in_vector(requests, with_timeout(300ms));

    ASSERT_EQ(results.size(), requests.size());
    for (std::size_t k = 0; k < results.size(); ++k) {
        if (k % 3 == 0) {
            EXPECT_EQ(results[k].error_message, "connect: Connection refused") << k;
        } else if (k % 3 == 1) {
            EXPECT_EQ(results[k].error, ErrorKind::timeout)
                << k << ": " << results[k].error_message;
        } else {
            ASSERT_TRUE(results[k].ok()) << k << ": " << results[k].error_message;
            EXPECT_NE(results[k].response.body.find("/numbered/" + std::to_string(k)),
                      std::string::npos);
        }
    }
}

TEST(InVector, MakesNoConnectionForNoRequest) {
    EXPECT_TRUE(fetch_all_in_vector({}, with_timeout(1s)).empty());
    EXPECT_TRUE(fetch_all_napping({}, with_timeout(1s), 1ms).empty());
}

}  // namespace
