// 02_tiny: the core and the tiny level of the conformance suite (tests/conformance_core.cpp,
// tests/conformance_tiny.cpp), then what only this tiny version has to show. Tiny has no deadline,
// so it is never sent anything that would make it wait for ever (no /fault/hang, no /fault/stall,
// no silent peer).
// These tests also run under ThreadSanitizer (ctest label `threads`), so N stays small.
#include <gtest/gtest.h>
#include <unistd.h>

#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "02_threads/tiny.hpp"
#include "common/json_reader.hpp"
#include "lab/labserver.hpp"
#include "tests/child_process.hpp"
#include "tests/conformance.hpp"
#include "tests/support/stage_support.hpp"

namespace sixways::threads::tiny {
namespace {

using namespace std::chrono_literals;
using lab::LabServer;
using testing_support::expect_each_numbered_body;
using testing_support::most_in_flight;
using testing_support::numbered_requests;
using testing_support::on_loopback;
using testing_support::request_for;

std::vector<Result> fetch(const std::vector<Request>& requests, const Options& options = {}) {
    const testing_support::Watchdog watchdog("02_tiny's fetch_all", 60s);
    return fetch_all(requests, options);
}

// ---- fetch_all ----

TEST(ThreadsTinyFetchAll, RunsEveryRequestOnAThreadOfItsOwnAllAtOnce) {
    LabServer server(on_loopback(200ms));
    server.start();
    const std::vector<Request> requests = numbered_requests(server, 20);
    // on_result is called from the threads at the same time: what it touches is behind a mutex.
    std::mutex mutex;
    std::set<std::thread::id> threads;
    std::size_t calls = 0;
    Options options;
    options.on_result = [&](std::size_t, const Result&) {
        const std::lock_guard<std::mutex> lock(mutex);
        threads.insert(std::this_thread::get_id());
        ++calls;
    };

    const std::vector<Result> results = fetch(requests, options);

    ASSERT_EQ(results.size(), requests.size());
    expect_each_numbered_body(results);
    EXPECT_GT(most_in_flight(results), 1u) << "not one after another";
    EXPECT_EQ(calls, requests.size());
    // No thread is joined before all are started, so no two can share an id.
    EXPECT_EQ(threads.size(), requests.size()) << "a thread of its own for each";
    EXPECT_EQ(threads.count(std::this_thread::get_id()), 0u) << "none on the calling thread";
}

// ---- the binary ----

// The system's limit on threads is hard to reach on purpose in-process, so this runs the binary as
// a user id that owns no other process, allowed only a handful of processes and threads
// (RLIMIT_NPROC, which counts both). Root ignores that limit, hence the change of user; setpriv
// and prlimit are the util-linux tools for the two steps.
TEST(ThreadsTinyBinary, FailsOnlyTheRequestsWhoseThreadTheSystemRefusesAsLimit) {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root, to run the binary as another user";
    if (::access("/usr/bin/setpriv", X_OK) != 0 || ::access("/usr/bin/prlimit", X_OK) != 0) {
        GTEST_SKIP() << "needs /usr/bin/setpriv and /usr/bin/prlimit (util-linux)";
    }
    LabServer server(on_loopback(300ms));
    server.start();
    // A user id of its own per test process, so that two runs at once do not share the limit.
    const std::string user = std::to_string(40000 + ::getpid() % 20000);
    // Six tasks: the process, the command line's Ctrl-C watcher, maybe a sanitizer's own thread,
    // and a few requests' threads. They are all asked for within a few milliseconds, long before
    // the first request ends (300 ms), so most are refused.
    const auto output = conformance::run_program(
        "/usr/bin/setpriv",
        {"--reuid=" + user, "--regid=" + user, "--clear-groups", "/usr/bin/prlimit", "--nproc=6", "--",
         STAGE_BINARY, "30", "--url", server.url("/"), "--json"},
        30s);

    ASSERT_FALSE(output.killed);
    EXPECT_EQ(output.exit_status, 1) << output.err;
    const Json report = parse_json(output.out);
    EXPECT_GT(report.at("ok").number, 0) << output.out;
    EXPECT_GT(report.at("errors").at("limit").number, 0) << output.out;
    EXPECT_EQ(report.at("ok").number + report.at("errors").at("limit").number, 30) << output.out;
    EXPECT_NE(output.err.find("x std::thread: Resource temporarily unavailable"), std::string::npos)
        << output.err;
}

}  // namespace
}  // namespace sixways::threads::tiny

const StageUnderTest threads_tiny{"02_tiny", &sixways::threads::tiny::fetch_all, STAGE_BINARY, false,
                                  "02_threads"};
INSTANTIATE_TEST_SUITE_P(ThreadsTiny, ConformanceCore, testing::Values(threads_tiny), StageName());
INSTANTIATE_TEST_SUITE_P(ThreadsTiny, ConformanceTiny, testing::Values(threads_tiny), StageName());
