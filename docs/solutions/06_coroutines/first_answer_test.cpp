// Exercise 6's first_answer: the first response wins, the other fetch is cancelled and finished
// before the coroutine returns, a failure never wins over a later response, and a cancel reaches
// both fetches.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "06_coroutines/event_loop.hpp"
#include "06_coroutines/future.hpp"
#include "06_coroutines/task.hpp"
#include "first_answer.hpp"
#include "lab/labserver.hpp"
#include "tests/support/stage_support.hpp"

namespace {

using namespace std::chrono_literals;
using sixways::Options;
using sixways::Request;
using sixways::Result;
using sixways::coroutines::CancelledError;
using sixways::coroutines::EventLoop;
using sixways::coroutines::Task;
using sixways::coroutines::TimerGuard;
using sixways::lab::LabServer;
using sixways::solutions::first_answer;
using sixways::testing_support::on_loopback;
using sixways::testing_support::request_for;
using sixways::testing_support::SilentServer;
using sixways::testing_support::with_timeout;

// Turns the loop until `future` is done, or stops it after 10 s: a solution that waits for a fetch
// that never ends then fails its test (run_until_complete throws) instead of hanging.
template <class Awaitable>
auto run_bounded(EventLoop& loop, Awaitable awaitable) {
    auto stop = [&loop] { loop.stop(); };
    TimerGuard watchdog(loop.call_later(10s, stop));
    return loop.run_until_complete(std::move(awaitable));
}

// What a fetch leaves in the loop while it runs: its socket's registration and its deadline.
void expect_nothing_left_running(const EventLoop& loop) {
    EXPECT_EQ(loop.watched_descriptors(), 0u) << "a fetch still watches its socket";
    EXPECT_EQ(loop.pending_timers(), 0u) << "a fetch's deadline is still pending";
}

// A fetch task dropped while it runs is destroyed where it stands, and says so on stderr: "Task was
// destroyed but it is pending!", or, when it goes while an exception unwinds, once for all of them
// as the loop is destroyed ("... pending tasks were destroyed while an exception unwound"). The
// loser must be cancelled and waited for instead.
void expect_no_task_destroyed_pending(const std::string& stderr_text) {
    EXPECT_EQ(stderr_text.find("Task was destroyed but it is pending!"), std::string::npos) << stderr_text;
    EXPECT_EQ(stderr_text.find("pending tasks were destroyed"), std::string::npos) << stderr_text;
}

// Runs `run` with stderr captured, and returns what it wrote there. The capture ends even when `run`
// throws, so that a solution that throws fails its own test and not, by a capture left open, the
// ones after it.
template <class Run>
std::string stderr_of(Run run) {
    testing::internal::CaptureStderr();
    try {
        run();
    } catch (...) {
        testing::internal::GetCapturedStderr();
        throw;
    }
    return testing::internal::GetCapturedStderr();
}

// The loser never answers and has an hour before its deadline: the coroutine can return only if it
// cancels it.
TEST(FirstAnswer, TheFirstResponseWinsAndTheOtherFetchIsCancelledAndFinished) {
    LabServer server(on_loopback(0ms));
    server.start();
    const Request hangs = request_for(server.url("/fault/hang"));
    const Request answers = request_for(server.url("/delay/20"));
    const Options options = with_timeout(1h);
    for (bool answering_one_first : {false, true}) {
        EventLoop loop;
        const Request& first = answering_one_first ? answers : hangs;
        const Request& second = answering_one_first ? hangs : answers;
        Result result;
        expect_no_task_destroyed_pending(
            stderr_of([&] { result = run_bounded(loop, first_answer(loop, first, second, options)); }));
        ASSERT_TRUE(result.ok()) << result.error_message;
        EXPECT_NE(result.response.body.find("/delay/20"), std::string::npos) << result.response.body;
        expect_nothing_left_running(loop);
    }
}

TEST(FirstAnswer, AFailureDoesNotWinOverALaterResponse) {
    LabServer server(on_loopback(0ms));
    server.start();
    const Request refused = request_for(SilentServer().url());  // its port refuses once it is gone
    const Request answers = request_for(server.url("/delay/50"));
    const Options options = with_timeout(5s);
    EventLoop loop;
    const Result result = run_bounded(loop, first_answer(loop, refused, answers, options));
    ASSERT_TRUE(result.ok()) << result.error_message;
    EXPECT_NE(result.response.body.find("/delay/50"), std::string::npos) << result.response.body;
    expect_nothing_left_running(loop);
}

TEST(FirstAnswer, WhenBothFailTheFailureThatCameLastIsReturned) {
    LabServer server(on_loopback(0ms));
    server.start();
    const Request refused = request_for(SilentServer().url());
    const Request reset_later = request_for(server.url("/fault/close"));  // a connect, then a close
    const Options options = with_timeout(5s);
    EventLoop loop;
    const Result result = run_bounded(loop, first_answer(loop, refused, reset_later, options));
    EXPECT_FALSE(result.ok());
    EXPECT_NE(result.error_message.rfind("connect:", 0), 0u) << "the refused connect came first: "
                                                               << result.error_message;
    expect_nothing_left_running(loop);
}

TEST(FirstAnswer, CancellingItCancelsBothFetchesAndWaitsForThem) {
    LabServer server(on_loopback(0ms));
    server.start();
    const Request hangs = request_for(server.url("/fault/hang"));
    const Options options = with_timeout(1h);
    // The loop is made and destroyed inside the capture: what it says, as it goes, of tasks
    // destroyed while pending is checked too.
    const std::string warnings = stderr_of([&] {
        EventLoop loop;
        Task<Result> task = loop.create_task(first_answer(loop, hangs, hangs, options));
        auto cancel = [&task] { task.cancel(); };
        TimerGuard later(loop.call_later(50ms, cancel));  // both fetches are waiting by then
        EXPECT_THROW(run_bounded(loop, task), CancelledError);
        EXPECT_TRUE(task.cancelled());
        expect_nothing_left_running(loop);
    });
    expect_no_task_destroyed_pending(warnings);
}

}  // namespace
