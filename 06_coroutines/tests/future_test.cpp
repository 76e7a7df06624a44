// Future on its own: states, results, callbacks, and what it prints.
#include <gtest/gtest.h>

#include <exception>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "06_coroutines/future.hpp"
#include "06_coroutines/tests/helpers.hpp"

namespace sixways::coroutines {
namespace {

using testing_support::Counted;

class FutureTest : public testing_support::LeakCheckedTest {};

// Runs the loop until the callbacks scheduled so far (and those they schedule) have run.
void run_pending_callbacks(EventLoop& loop) {
    loop.call_soon([&loop] { loop.call_soon([&loop] { loop.stop(); }); });
    loop.run_forever();
}

TEST_F(FutureTest, ANewFutureIsPendingAndItsResultThrowsInvalidStateError) {
    EventLoop loop;
    Future<int> future(loop);
    EXPECT_FALSE(future.done());
    EXPECT_FALSE(future.cancelled());
    EXPECT_THROW(future.result(), InvalidStateError);
    EXPECT_THROW(future.exception(), InvalidStateError);
}

TEST_F(FutureTest, SetResultMakesItDoneWithThatResult) {
    EventLoop loop;
    Future<std::string> future(loop);
    future.set_result("hello");
    EXPECT_TRUE(future.done());
    EXPECT_EQ(future.result(), "hello");
    EXPECT_EQ(future.exception(), nullptr);
}

TEST_F(FutureTest, ASecondSetResultOrSetExceptionThrowsInvalidStateError) {
    EventLoop loop;
    Future<int> future(loop);
    future.set_result(1);
    EXPECT_THROW(future.set_result(2), InvalidStateError);
    EXPECT_THROW(future.set_exception(std::make_exception_ptr(std::runtime_error("late"))), InvalidStateError);
    EXPECT_EQ(future.result(), 1);
}

TEST_F(FutureTest, SetExceptionMakesResultRethrowIt) {
    EventLoop loop;
    Future<void> future(loop);
    future.set_exception(std::make_exception_ptr(std::runtime_error("boom")));
    EXPECT_TRUE(future.done());
    EXPECT_FALSE(future.cancelled());
    EXPECT_THROW(future.result(), std::runtime_error);
    EXPECT_NE(future.exception(), nullptr);
}

TEST_F(FutureTest, CancelMakesItCancelledAndResultThrowsCancelledError) {
    EventLoop loop;
    Future<int> future(loop);
    EXPECT_TRUE(future.cancel());
    EXPECT_TRUE(future.done());
    EXPECT_TRUE(future.cancelled());
    EXPECT_THROW(future.result(), CancelledError);
    EXPECT_THROW(future.exception(), CancelledError);
    EXPECT_FALSE(future.cancel());  // done already
    EXPECT_THROW(future.set_result(1), InvalidStateError);
}

TEST_F(FutureTest, DoneCallbacksRunOnALaterTurnInTheOrderTheyWereAdded) {
    EventLoop loop;
    Future<int> future(loop);
    std::vector<int> calls;
    future.add_done_callback([&] { calls.push_back(1); });
    future.add_done_callback([&] { calls.push_back(2); });
    future.set_result(7);
    EXPECT_TRUE(calls.empty());  // never inside set_result
    run_pending_callbacks(loop);
    EXPECT_EQ(calls, (std::vector<int>{1, 2}));
}

TEST_F(FutureTest, ADoneCallbackAddedToADoneFutureRunsOnTheNextTurn) {
    EventLoop loop;
    Future<int> future(loop);
    future.cancel();
    bool called = false;
    future.add_done_callback([&] { called = true; });
    EXPECT_FALSE(called);
    run_pending_callbacks(loop);
    EXPECT_TRUE(called);
}

TEST_F(FutureTest, CopiesAreTheSameFuture) {
    EventLoop loop;
    Future<int> future(loop);
    Future<int> copy = future;
    copy.set_result(5);
    EXPECT_TRUE(future.done());
    EXPECT_EQ(future.result(), 5);
    EXPECT_TRUE(future == copy);
    EXPECT_FALSE(future == Future<int>(loop));
}

TEST_F(FutureTest, PrintsItsStateForDebugging) {
    EventLoop loop;
    Future<int> pending(loop);
    Future<int> finished(loop);
    finished.set_result(42);
    Future<int> failed(loop);
    failed.set_exception(std::make_exception_ptr(std::runtime_error("boom")));
    Future<void> cancelled(loop);
    cancelled.cancel();
    EXPECT_EQ(pending.to_string(), "<Future pending>");
    EXPECT_EQ(finished.to_string(), "<Future finished>");
    EXPECT_EQ(failed.to_string(), "<Future finished exception=boom>");
    EXPECT_EQ(cancelled.to_string(), "<Future cancelled>");
    std::ostringstream out;
    out << finished;
    EXPECT_EQ(out.str(), "<Future finished>");
}

TEST_F(FutureTest, RunUntilCompleteReturnsTheResultOrRethrowsTheException) {
    EventLoop loop;
    Future<int> future(loop);
    loop.call_soon([future]() mutable { future.set_result(3); });
    EXPECT_EQ(loop.run_until_complete(future), 3);
    Future<int> failing(loop);
    loop.call_soon([failing]() mutable { failing.set_exception(std::make_exception_ptr(std::runtime_error("no"))); });
    EXPECT_THROW(loop.run_until_complete(failing), std::runtime_error);
}

TEST_F(FutureTest, RunUntilCompleteOfAFutureNothingWillCompleteThrowsInsteadOfHanging) {
    EventLoop loop;
    Future<int> orphan(loop);
    EXPECT_THROW(loop.run_until_complete(orphan), std::logic_error);
}

}  // namespace
}  // namespace sixways::coroutines
