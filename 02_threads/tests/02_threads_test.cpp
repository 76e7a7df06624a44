// Stage 02's own tests: threads, a fixed pool of them, and what happens when the system refuses one.
// What every stage must do is checked by the conformance suite, joined at the bottom of this file.
// These tests also run under ThreadSanitizer (ctest label `threads`), so N stays small.
#include "02_threads/fetch.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/json_reader.hpp"
#include "common/limits.hpp"
#include "lab/labserver.hpp"
#include "tests/child_process.hpp"
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
using sixways::threads::fetch_all;

// Which threads delivered which results. on_result is called from the worker threads at the same
// time, so everything it touches is behind a mutex.
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

TEST(Threads, RunsEveryRequestOnAThreadOfItsOwnWhenNotLimited) {
    sixways::lab::LabServer server(on_loopback(100ms));
    server.start();
    const std::vector<Request> requests = numbered_requests(server, 40);
    Deliveries deliveries;
    Options options = with_timeout(10s);
    options.on_result = [&](std::size_t index, const Result&) { deliveries.record(index); };
    const std::vector<Result> results = fetch_all(requests, options);

    ASSERT_EQ(results.size(), requests.size());
    expect_each_numbered_body(results);
    std::sort(deliveries.indexes.begin(), deliveries.indexes.end());
    std::vector<std::size_t> each_once(requests.size());
    for (std::size_t k = 0; k < each_once.size(); ++k) each_once[k] = k;
    EXPECT_EQ(deliveries.indexes, each_once);
    // No thread is joined before all are started, so no two can share an id.
    EXPECT_EQ(deliveries.threads.size(), requests.size());
    EXPECT_EQ(deliveries.threads.count(std::this_thread::get_id()), 0u);
    EXPECT_GT(most_in_flight(results), 1u);
}

TEST(Threads, KeepsAtMostCRequestsInFlightWithAPoolOfCThreads) {
    sixways::lab::LabServer server(on_loopback(50ms));
    server.start();
    const std::vector<Request> requests = numbered_requests(server, 24);
    Deliveries deliveries;
    Options options = with_timeout(10s);
    options.concurrency = 4;
    options.on_result = [&](std::size_t index, const Result&) { deliveries.record(index); };
    const std::vector<Result> results = fetch_all(requests, options);

    ASSERT_EQ(results.size(), requests.size());
    expect_each_numbered_body(results);
    EXPECT_EQ(deliveries.indexes.size(), requests.size());
    EXPECT_LE(deliveries.threads.size(), 4u);
    EXPECT_EQ(deliveries.threads.count(std::this_thread::get_id()), 0u);
    EXPECT_LE(most_in_flight(results), 4u);
    EXPECT_GT(most_in_flight(results), 1u);
}

TEST(Threads, StartsNoMoreWorkersThanRequests) {
    sixways::lab::LabServer server(on_loopback(0ms));
    server.start();
    const std::vector<Request> requests = numbered_requests(server, 3);
    Deliveries deliveries;
    Options options = with_timeout(5s);
    options.concurrency = 100;
    options.on_result = [&](std::size_t index, const Result&) { deliveries.record(index); };
    const std::vector<Result> results = fetch_all(requests, options);

    ASSERT_EQ(results.size(), 3u);
    expect_each_numbered_body(results);
    EXPECT_LE(deliveries.threads.size(), 3u);
}

// The system's limit on threads is hard to reach on purpose in-process, so this runs the binary as
// a user id that owns no other process, allowed only a handful of processes and threads
// (RLIMIT_NPROC, which counts both). Root ignores that limit, hence the change of user; setpriv
// and prlimit are the util-linux tools for the two steps.
TEST(Threads, FailsOnlyTheRequestsWhoseThreadTheSystemRefuses) {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root, to run the binary as another user";
    if (::access("/usr/bin/setpriv", X_OK) != 0 || ::access("/usr/bin/prlimit", X_OK) != 0) {
        GTEST_SKIP() << "needs /usr/bin/setpriv and /usr/bin/prlimit (util-linux)";
    }
    sixways::lab::LabServer server(on_loopback(300ms));
    server.start();
    // A user id of its own per test process, so that two runs at once do not share the limit.
    const std::string user = std::to_string(40000 + ::getpid() % 20000);
    // Six tasks: the process, the command line's Ctrl-C watcher, maybe a sanitizer's own thread,
    // and a few workers. The requests' threads are all asked for within a few milliseconds, long
    // before the first one finishes (300 ms), so most are refused.
    const sixways::conformance::ChildOutput run = sixways::conformance::run_program(
        "/usr/bin/setpriv",
        {"--reuid=" + user, "--regid=" + user, "--clear-groups", "/usr/bin/prlimit", "--nproc=6",
         "--", STAGE_BINARY, "30", "--url", server.url("/"), "--timeout", "5", "--json"},
        30s);

    ASSERT_FALSE(run.killed);
    EXPECT_EQ(run.exit_status, 1) << run.err;
    const sixways::Json report = sixways::parse_json(run.out);
    ASSERT_NE(report.find("ok"), nullptr) << run.out;
    ASSERT_NE(report.find("errors"), nullptr) << run.out;
    const sixways::Json* limit = report.find("errors")->find("limit");
    ASSERT_NE(limit, nullptr) << run.out;
    EXPECT_GT(report.find("ok")->number, 0) << run.out;
    EXPECT_GT(limit->number, 0) << run.out;
    EXPECT_EQ(report.find("ok")->number + limit->number, 30) << run.out;
    EXPECT_NE(run.err.find("pthread_create: Resource temporarily unavailable"), std::string::npos)
        << run.err;
}

// Capped at 200 MB of address space (`ulimit -v 200000`), a thousand threads run out of memory: for
// their stacks, for malloc's per-thread arenas, for what each fetch allocates, and for what the
// command line's report keeps of each result. Every request must still end with one result,
// whichever way it fails, and the run with its report, not with std::terminate.
TEST(Threads, AccountsForEveryRequestInItsReportWhenMemoryRunsOut) {
#ifdef SIXWAYS_SANITIZE_SHADOW_MEMORY
    GTEST_SKIP() << "a sanitizer's shadow memory does not fit under a cap on address space";
#endif
    if (::access("/usr/bin/prlimit", X_OK) != 0) GTEST_SKIP() << "needs /usr/bin/prlimit";
    // The lab server, in this process, holds the other end of every connection.
    if (sixways::raise_open_file_limit() < 2500) GTEST_SKIP() << "needs 2500 descriptors";
    sixways::lab::LabServer server(on_loopback(300ms));
    server.start();
    const sixways::conformance::ChildOutput run = sixways::conformance::run_program(
        "/usr/bin/prlimit",
        {"--as=204800000", "--", STAGE_BINARY, "1000", "--url", server.url("/"), "--json"}, 60s);

    ASSERT_FALSE(run.killed);
    EXPECT_TRUE(run.exit_status == 0 || run.exit_status == 1)
        << "exit status " << run.exit_status << ": " << run.err;
    const sixways::Json report = sixways::parse_json(run.out);
    ASSERT_NE(report.find("ok"), nullptr) << run.out << run.err;
    ASSERT_NE(report.find("failed"), nullptr) << run.out;
    EXPECT_EQ(report.find("ok")->number + report.find("failed")->number, 1000) << run.out;
}

TEST(Threads, StopsAServerThatTricklesBytesAtTheRequestsDeadline) {
    EndlessTrickle server;
    const std::vector<Result> results = fetch_all({request_for(server.url())}, with_timeout(300ms));
    ASSERT_EQ(results.size(), 1u);
    EXPECT_EQ(results[0].error, ErrorKind::timeout);
    EXPECT_EQ(results[0].error_message, "timeout after 300 ms while receiving");
    EXPECT_NE(results[0].timing.first_byte, Clock::time_point{});  // bytes did arrive
}

TEST(Threads, FailsARequestThatFindsNoDescriptorWithLimitAndGoesOn) {
    sixways::lab::LabServer server(on_loopback(0ms));
    server.start();
    const std::vector<Request> requests = {request_for(server.url("/first")),
                                           request_for(server.url("/second"))};
    DescriptorsLeft no_descriptor_left(0);
    Options options = with_timeout(5s);
    options.concurrency = 1;  // one worker, so the second request starts after the first failed
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
const StageUnderTest threads{"02_threads", &sixways::threads::fetch_all, STAGE_BINARY};
}  // namespace

INSTANTIATE_TEST_SUITE_P(Threads, ConformanceCore, testing::Values(threads), StageName());
INSTANTIATE_TEST_SUITE_P(Threads, Conformance, testing::Values(threads), StageName());
