// Tests of chapter 02's exercises 4 and 5, against the lab server on loopback. They check what the
// fetchers do (every request answered once, in the right slot, on threads of their own, at most C
// in flight, results in the order they finished), never how long they take.
#include "docs/solutions/02_threads/std_thread_fetchers.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "lab/labserver.hpp"
#include "tests/support/stage_support.hpp"

namespace {

using namespace std::chrono_literals;
using namespace sixways::testing_support;  // request_for, on_loopback, SilentServer, ...
using sixways::Options;
using sixways::Request;
using sixways::Result;
using sixways::solutions::fetch_all_with_std_threads;
using sixways::solutions::fetch_in_completion_order;
using sixways::solutions::Finished;

// Which threads delivered which results; on_result may be called from several threads at once.
struct Deliveries {
    std::mutex mutex;
    std::vector<std::size_t> indexes;
    std::set<std::thread::id> threads;

    void record(std::size_t index) {
        const std::lock_guard<std::mutex> lock(mutex);
        indexes.push_back(index);
        threads.insert(std::this_thread::get_id());
    }
};

TEST(StdThreads, RunsEveryRequestOnAThreadOfItsOwnAndKeepsRequestOrder) {
    const Watchdog watchdog("fetch_all_with_std_threads", 60s);
    sixways::lab::LabServer server(on_loopback(100ms));
    server.start();
    const std::vector<Request> requests = numbered_requests(server, 20);
    Deliveries deliveries;
    Options options = with_timeout(10s);
    options.on_result = [&](std::size_t index, const Result&) { deliveries.record(index); };

    const std::vector<Result> results = fetch_all_with_std_threads(requests, options);

    ASSERT_EQ(results.size(), requests.size());
    expect_each_numbered_body(results);  // slot k holds request k's response
    std::set<std::size_t> each(deliveries.indexes.begin(), deliveries.indexes.end());
    EXPECT_EQ(deliveries.indexes.size(), requests.size());
    EXPECT_EQ(each.size(), requests.size());
    // Every thread is started before any is joined, so no two can share an id: 20 ids, 20 threads.
    EXPECT_EQ(deliveries.threads.size(), requests.size());
    EXPECT_EQ(deliveries.threads.count(std::this_thread::get_id()), 0u);
    // The waits overlapped: a loop that fetched one request after another would give 1.
    EXPECT_GT(most_in_flight(results), 1u);
}

TEST(StdThreads, FailsARefusedConnectionAndStillAnswersTheOthers) {
    const Watchdog watchdog("fetch_all_with_std_threads", 60s);
    sixways::lab::LabServer server(on_loopback(0ms));
    server.start();
    std::vector<Request> requests = numbered_requests(server, 3);
    {
        const SilentServer closed;  // destroyed at once: its port now refuses connections
        requests.push_back(request_for(closed.url()));
    }
    const std::vector<Result> results = fetch_all_with_std_threads(requests, with_timeout(5s));

    ASSERT_EQ(results.size(), 4u);
    for (std::size_t k = 0; k < 3; ++k) EXPECT_TRUE(results[k].ok()) << results[k].error_message;
    EXPECT_EQ(results[3].error, sixways::ErrorKind::connect);
    EXPECT_EQ(results[3].error_message, "connect: Connection refused");
}

TEST(StdThreads, MakesNoThreadForNoRequest) {
    EXPECT_TRUE(fetch_all_with_std_threads({}, with_timeout(1s)).empty());
    EXPECT_TRUE(fetch_in_completion_order({}, with_timeout(1s)).empty());
}

TEST(CompletionOrder, ReturnsEveryRequestOnceWithAtMostCInFlight) {
    const Watchdog watchdog("fetch_in_completion_order", 60s);
    sixways::lab::LabServer server(on_loopback(50ms));
    server.start();
    const std::vector<Request> requests = numbered_requests(server, 12);
    Deliveries deliveries;
    Options options = with_timeout(10s, 3);
    options.on_result = [&](std::size_t index, const Result&) { deliveries.record(index); };

    const std::vector<Finished> finished = fetch_in_completion_order(requests, options);

    ASSERT_EQ(finished.size(), requests.size());
    std::vector<Result> by_index(requests.size());
    std::set<std::size_t> seen;
    for (const Finished& f : finished) {
        ASSERT_LT(f.index, requests.size());
        EXPECT_TRUE(seen.insert(f.index).second) << "request " << f.index << " came back twice";
        by_index[f.index] = f.result;
    }
    expect_each_numbered_body(by_index);  // each pair carries its own request's response
    EXPECT_EQ(deliveries.indexes.size(), requests.size());
    EXPECT_LE(deliveries.threads.size(), 3u);
    EXPECT_LE(most_in_flight(by_index), 3u);
    EXPECT_GT(most_in_flight(by_index), 1u);
}

// Sends a complete response on the first connection that `server` has queued, and closes it.
void answer_one(SilentServer& server) {
    const int fd = server.accept();
    const char response[] = "HTTP/1.1 200 OK\r\nContent-Length: 4\r\nConnection: close\r\n\r\nlast";
    ASSERT_EQ(::send(fd, response, std::strlen(response), MSG_NOSIGNAL),
              static_cast<ssize_t>(std::strlen(response)));
    ::close(fd);
}

// Request 0 goes to a server that answers only once the nine others have finished: whatever the
// timing, it finishes last, and the pool must put it last.
TEST(CompletionOrder, PutsTheRequestThatFinishedLastAtTheEnd) {
    const Watchdog watchdog("fetch_in_completion_order", 60s);
    sixways::lab::LabServer server(on_loopback(0ms));
    server.start();
    SilentServer late;
    std::vector<Request> requests = numbered_requests(server, 10);
    requests[0] = request_for(late.url());
    std::atomic<int> others_done{0};
    Options options = with_timeout(10s, 2);
    options.on_result = [&](std::size_t index, const Result&) {
        if (index != 0 && ++others_done == 9) answer_one(late);
    };

    const std::vector<Finished> finished = fetch_in_completion_order(requests, options);

    ASSERT_EQ(finished.size(), 10u);
    EXPECT_EQ(finished.back().index, 0u);
    ASSERT_TRUE(finished.back().result.ok()) << finished.back().result.error_message;
    EXPECT_EQ(finished.back().result.response.body, "last");
    for (std::size_t k = 0; k + 1 < finished.size(); ++k) {
        EXPECT_NE(finished[k].index, 0u);
        EXPECT_TRUE(finished[k].result.ok()) << finished[k].result.error_message;
    }
}

}  // namespace
