// Stage 06's fetch. The conformance suite checks what every stage promises; the cases here check
// what is particular to this one: on_result from inside the loop, the concurrency limit and what
// it costs, a deadline that names its phase, a clean end (no task left pending), and the memory a
// request costs while it waits.
#include <malloc.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "06_coroutines/fetch.hpp"
#include "06_coroutines/sleep.hpp"
#include "06_coroutines/tests/helpers.hpp"
#include "lab/labserver.hpp"
#include "tests/conformance.hpp"
#include "tests/support/stage_support.hpp"

namespace {
const StageUnderTest coroutines{"06_coroutines", &sixways::coroutines::fetch_all, STAGE_BINARY};
}  // namespace

INSTANTIATE_TEST_SUITE_P(Coroutines, ConformanceCore, testing::Values(coroutines), StageName());
INSTANTIATE_TEST_SUITE_P(Coroutines, Conformance, testing::Values(coroutines), StageName());

namespace sixways::coroutines {
namespace {

using namespace std::chrono_literals;
using testing_support::expect_loop_is_clean;
using testing_support::most_in_flight;
using testing_support::on_loopback;
using testing_support::request_for;
using testing_support::run_within;
using testing_support::SilentServer;

class FetchTest : public testing_support::LeakCheckedTest {};

TEST_F(FetchTest, CallsOnResultOnceForEachRequestWhenItsResultIsFinal) {
    lab::LabServer server(on_loopback(10ms));
    server.start();
    std::vector<Request> requests;
    for (int i = 0; i < 20; ++i) requests.push_back(request_for(server.url("/page/" + std::to_string(i))));
    std::vector<int> calls(requests.size(), 0);
    bool all_final = true;
    Options options;
    options.timeout = 5s;
    options.on_result = [&](std::size_t index, const Result& result) {
        ++calls.at(index);
        all_final = all_final && result.timing.done != Clock::time_point{};
    };
    const std::vector<Result> results = fetch_all(requests, options);
    ASSERT_EQ(results.size(), requests.size());
    for (std::size_t i = 0; i < results.size(); ++i) {
        EXPECT_EQ(calls[i], 1) << "request " << i;
        ASSERT_TRUE(results[i].ok()) << results[i].error_message;
        EXPECT_NE(results[i].response.body.find("/page/" + std::to_string(i)), std::string::npos);
    }
    EXPECT_TRUE(all_final);
}

TEST_F(FetchTest, KeepsAtMostConcurrencyRequestsInFlight) {
    lab::LabServer server(on_loopback(20ms));
    server.start();
    const std::vector<Request> requests(8, request_for(server.url("/")));
    Options options;
    options.timeout = 5s;
    options.concurrency = 2;
    const std::vector<Result> results = fetch_all(requests, options);
    for (const Result& result : results) ASSERT_TRUE(result.ok()) << result.error_message;
    EXPECT_EQ(most_in_flight(results), 2u);
}

// With a limit, the requests that wait for their turn cost nothing yet: no task, no frame. Seen in
// the heap when the first result comes in: the results vector is there, and the few fetches that
// run, but not a waiting fetch per request (about a kilobyte each: frame and task state).
TEST_F(FetchTest, WithALimitTheRequestsWaitingForTheirTurnHaveNoTaskYet) {
    if (mallinfo2().uordblks == 0) GTEST_SKIP() << "mallinfo2 does not see this allocator";
    lab::LabServer server(on_loopback(0ms));
    server.start();
    constexpr std::size_t count = 1000;  // enough to make the loop's own tables a small share
    const std::vector<Request> requests(count, request_for(server.url("/")));
    Options options;
    options.timeout = 5s;
    options.concurrency = 3;
    options.body_cap = 0;
    // In use: small chunks, and big ones (the results vector) that malloc maps on their own.
    auto heap_in_use = [] { return mallinfo2().uordblks + mallinfo2().hblkhd; };
    std::size_t at_first_result = 0;
    options.on_result = [&](std::size_t, const Result&) {
        if (at_first_result == 0) at_first_result = heap_in_use();
    };
    const std::size_t before = heap_in_use();
    const std::vector<Result> results = fetch_all(requests, options);
    for (const Result& result : results) ASSERT_TRUE(result.ok()) << result.error_message;
    const std::size_t per_request = (at_first_result - before) / count;
    std::printf("heap per request at the first result: %zu bytes\n", per_request);
    // sizeof(Result) is about 200 bytes; a waiting fetch would add about 1.6 KB (frame and state).
    EXPECT_LT(per_request, 600u);
}

TEST_F(FetchTest, ATimeoutNamesThePhaseItInterrupted) {
    SilentServer server;
    Options options;
    options.timeout = 100ms;
    const std::vector<Result> results = fetch_all({request_for(server.url())}, options);
    ASSERT_EQ(results.size(), 1u);
    EXPECT_EQ(results[0].error, ErrorKind::timeout);
    EXPECT_EQ(results[0].error_message, "timeout after 100 ms while waiting");
    EXPECT_NE(results[0].timing.sent, Clock::time_point{});  // it got as far as sending
}

// The longest timeout the command line accepts: a deadline that overflowed into the past would time
// the request out before it began.
TEST_F(FetchTest, ATimeoutTooLongForTheClockMeansNoDeadline) {
    lab::LabServer server(on_loopback(0ms));
    server.start();
    Options options;
    options.timeout = parse_duration("9223372036");  // seconds: just under Duration::max()
    const std::vector<Result> results = fetch_all({request_for(server.url("/"))}, options);
    ASSERT_EQ(results.size(), 1u);
    EXPECT_TRUE(results[0].ok()) << results[0].error_message;
}

TEST_F(FetchTest, TriesTheNextAddressWhenOneRefuses) {
    lab::LabServer server(on_loopback(0ms));
    server.start();
    Request request = request_for(server.url("/second"));
    Request refused = request_for("http://127.0.0.1:1/");
    request.addresses.insert(request.addresses.begin(), refused.addresses.front());
    const std::vector<Result> results = fetch_all({request}, Options{});
    ASSERT_TRUE(results[0].ok()) << results[0].error_message;
    EXPECT_NE(results[0].response.body.find("/second"), std::string::npos);
}

TEST_F(FetchTest, ARequestWithNoAddressIsAResolveError) {
    Request request = request_for("http://127.0.0.1:1/");
    request.addresses.clear();
    const std::vector<Result> results = fetch_all({request}, Options{});
    EXPECT_EQ(results[0].error, ErrorKind::resolve);
}

TEST_F(FetchTest, ARunEndsWithNoTaskLeftPendingAndNothingSaidOnStderr) {
    lab::LabServer server(on_loopback(5ms));
    server.start();
    std::vector<Request> requests(100, request_for(server.url("/")));
    requests.push_back(request_for(server.url("/fault/hang")));
    requests.push_back(request_for(server.url("/fault/reset")));
    Options options;
    options.timeout = 300ms;
    options.concurrency = 30;
    testing::internal::CaptureStderr();
    const std::vector<Result> results = fetch_all(requests, options);
    const std::string errors = testing::internal::GetCapturedStderr();
    EXPECT_EQ(errors, "");
    for (std::size_t i = 0; i < 100; ++i) EXPECT_TRUE(results[i].ok()) << results[i].error_message;
    EXPECT_EQ(results[100].error, ErrorKind::timeout);
    EXPECT_EQ(results[101].error, ErrorKind::receive);
}

// What one request costs while it waits for its answer: its coroutine frames (fetch, wait_for,
// the exchange) and its one task state, the wait for the socket, the parser, its timer. Measured as the
// growth of the heap with glibc's mallinfo2 (AddressSanitizer has its own allocator: skipped
// there).
TEST_F(FetchTest, ARequestWaitingForItsAnswerCostsAFewKilobytesAtMost) {
    if (mallinfo2().uordblks == 0) GTEST_SKIP() << "mallinfo2 does not see this allocator";
    SilentServer server;
    const Request request = request_for(server.url());
    constexpr std::size_t count = 200;
    Options options;
    options.timeout = 1h;
    options.body_cap = 0;  // as the command line runs it
    EventLoop loop;
    std::vector<Task<Result>> tasks;
    tasks.reserve(count);
    std::vector<Request> copies(count, request);  // fetch reads them; they are not its cost
    run_within(loop, sleep(loop, 1ms));     // the loop's own tables are warm
    const std::size_t before = mallinfo2().uordblks;
    for (std::size_t i = 0; i < count; ++i) {
        tasks.push_back(loop.create_task(fetch(loop, copies[i], options)));
    }
    run_within(loop, sleep(loop, 50ms));  // all connected, all sent, all waiting
    const std::size_t after = mallinfo2().uordblks;
    const std::size_t per_request = (after - before) / count;
    std::printf("heap per request waiting for its answer: %zu bytes\n", per_request);
    RecordProperty("heap_bytes_per_request_in_flight", static_cast<int>(per_request));
    EXPECT_LT(per_request, 8u * 1024);
    for (Task<Result>& task : tasks) task.cancel();
    for (Task<Result>& task : tasks) EXPECT_THROW(run_within(loop, task), CancelledError);
    expect_loop_is_clean(loop);
}

}  // namespace
}  // namespace sixways::coroutines
