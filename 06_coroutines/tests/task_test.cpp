// Task: starting, stepping, results and exceptions through co_await, cancellation, and what
// happens to a task that is destroyed while it is pending.
#include <gtest/gtest.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "06_coroutines/sleep.hpp"
#include "06_coroutines/task.hpp"
#include "06_coroutines/tests/helpers.hpp"

namespace sixways::coroutines {
namespace {

using namespace std::chrono_literals;
using testing_support::Counted;
using testing_support::expect_loop_is_clean;
using testing_support::run_one_turn;
using testing_support::run_within;

class TaskTest : public testing_support::LeakCheckedTest {};

Task<void> mark_started(bool* started) {
    *started = true;
    co_return;
}

Task<int> answer() { co_return 42; }

Task<int> wait_for_value(Future<int> future) { co_return co_await future; }

TEST_F(TaskTest, ATaskDoesNotStartUntilTheLoopRunsIt) {
    EventLoop loop;
    bool started = false;
    Task<void> task = mark_started(&started);
    EXPECT_FALSE(started);  // calling a coroutine function only makes its frame
    EXPECT_FALSE(task.started());
    task = loop.create_task(std::move(task));
    EXPECT_FALSE(started);  // create_task schedules the first step, for the next turn
    EXPECT_TRUE(task.started());
    EXPECT_FALSE(task.done());
    run_one_turn(loop);
    EXPECT_TRUE(started);
    EXPECT_TRUE(task.done());
}

TEST_F(TaskTest, RunUntilCompleteStartsAnUnstartedTaskAndReturnsItsResult) {
    EventLoop loop;
    EXPECT_EQ(loop.run_until_complete(answer()), 42);
}

TEST_F(TaskTest, ATaskIsAFutureThatAnotherTaskCanAwait) {
    EventLoop loop;
    Future<int> future(loop);
    Task<int> inner = loop.create_task(wait_for_value(future));
    Task<int> outer = loop.create_task([](Task<int> awaited) -> Task<int> {
        co_return 2 * co_await awaited;
    }(inner));
    run_one_turn(loop);
    future.set_result(21);
    EXPECT_EQ(run_within(loop, outer), 42);
    EXPECT_EQ(inner.result(), 21);
}

Task<int> log_and_answer(std::vector<std::string>* log) {
    log->push_back("child");
    co_return 1;
}

Task<int> parent_logging(EventLoop& loop, std::vector<std::string>* log) {
    loop.call_soon([log] { log->push_back("callback"); });
    log->push_back("parent before");
    const int x = co_await log_and_answer(log);
    log->push_back("parent after");
    co_return x;
}

TEST_F(TaskTest, AwaitingAnUnstartedTaskRunsItAtOnceLikeAFunctionCall) {
    EventLoop loop;
    std::vector<std::string> log;
    EXPECT_EQ(run_within(loop, parent_logging(loop, &log)), 1);
    // The child ran and returned within the parent's step: the callback scheduled before it, for
    // the next turn, came after both.
    EXPECT_EQ(log, (std::vector<std::string>{"parent before", "child", "parent after", "callback"}));
}

Task<int> immediate(int i) { co_return i; }

Task<long> sum_of_immediate_tasks(int count) {
    long sum = 0;
    for (int i = 0; i < count; ++i) sum += co_await immediate(i);
    co_return sum;
}

Task<long> sum_of_done_futures(EventLoop& loop, int count) {
    long sum = 0;
    for (int i = 0; i < count; ++i) {
        Future<int> done(loop);
        done.set_result(i);
        sum += co_await done;
    }
    co_return sum;
}

// With symmetric transfer, each of these awaits would resume the awaiting coroutine from inside
// the finished one; without a guaranteed tail call (g++ 12 at -O0, or under ASan) the stack grows
// with every one and overflows long before a million. Here the stack stays flat in every build.
TEST_F(TaskTest, AMillionImmediatelyCompletingAwaitsDoNotOverflowTheStack) {
    EventLoop loop;
    constexpr int count = 1'000'000;
    constexpr long expected = static_cast<long>(count) * (count - 1) / 2;
    // No watchdog: nothing here waits, and a slow sanitizer build must not be stopped half-way.
    EXPECT_EQ(loop.run_until_complete(sum_of_immediate_tasks(count)), expected);
    EXPECT_EQ(loop.run_until_complete(sum_of_done_futures(loop, count)), expected);
}

Task<int> nested(Future<int> bottom, int depth) {
    if (depth == 0) co_return co_await bottom;
    co_return 1 + co_await nested(bottom, depth - 1);
}

TEST_F(TaskTest, AChainOfWaitingTasksFinishesOneTurnAtATimeThroughTheReadyQueue) {
    EventLoop loop;
    Future<int> bottom(loop);
    Task<int> top = loop.create_task(nested(bottom, 1000));
    run_one_turn(loop);  // a thousand nested tasks, all waiting
    EXPECT_FALSE(top.done());
    bottom.set_result(0);
    EXPECT_EQ(run_within(loop, top), 1000);
}

Task<int> fails_after(EventLoop& loop, Duration delay) {
    if (delay > Duration::zero()) co_await sleep(loop, delay);
    throw std::runtime_error("from the bottom");
}

Task<int> middle(EventLoop& loop, Duration delay) { co_return co_await fails_after(loop, delay) + 1; }

Task<std::string> top_catches(EventLoop& loop, Duration delay) {
    try {
        co_await middle(loop, delay);
    } catch (const std::runtime_error& error) {
        co_return error.what();
    }
    co_return "nothing thrown";
}

TEST_F(TaskTest, ExceptionsTravelThroughThreeLevelsOfCoAwait) {
    EventLoop loop;
    for (const Duration delay : {Duration::zero(), Duration(1ms)}) {  // at once, and after a wait
        EXPECT_EQ(run_within(loop, top_catches(loop, delay)), "from the bottom");
        EXPECT_THROW(run_within(loop, middle(loop, delay)), std::runtime_error);
    }
}

Task<void> sleep_for_an_hour(EventLoop& loop, bool* saw_cancel, Counted held) {
    Counted local(held.value + 1);
    try {
        co_await sleep(loop, 1h);
    } catch (const CancelledError&) {
        *saw_cancel = true;
        throw;
    }
}

TEST_F(TaskTest, CancellingASleepingTaskThrowsCancelledErrorInsideItAndRemovesTheTimer) {
    EventLoop loop;
    bool saw_cancel = false;
    Task<void> task = loop.create_task(sleep_for_an_hour(loop, &saw_cancel, Counted(1)));
    run_one_turn(loop);
    EXPECT_TRUE(task.cancel());
    EXPECT_THROW(run_within(loop, task), CancelledError);
    EXPECT_TRUE(saw_cancel);
    EXPECT_TRUE(task.cancelled());
    EXPECT_FALSE(task.cancel());  // done already
    // The hour-long timer went with the sleep: nothing is left for the loop to wait for.
    expect_loop_is_clean(loop);
}

Task<int> shrugs_off_cancel(EventLoop& loop) {
    try {
        co_await sleep(loop, 1h);
    } catch (const CancelledError&) {
        co_return -1;  // cancel() is a request: a coroutine may decide to finish anyway
    }
    co_return 0;
}

TEST_F(TaskTest, ACoroutineMayCatchCancelledErrorAndFinishNormally) {
    EventLoop loop;
    Task<int> task = loop.create_task(shrugs_off_cancel(loop));
    run_one_turn(loop);
    task.cancel();
    EXPECT_EQ(run_within(loop, task), -1);
    EXPECT_FALSE(task.cancelled());
}

TEST_F(TaskTest, ATaskCancelledBeforeItsFirstStepNeverRuns) {
    EventLoop loop;
    bool started = false;
    Task<void> task = loop.create_task(mark_started(&started));
    EXPECT_TRUE(task.cancel());
    EXPECT_THROW(run_within(loop, task), CancelledError);
    EXPECT_FALSE(started);
}

Task<void> hold_and_sleep(EventLoop& loop, Counted held) {
    Counted local(held.value + 1);
    co_await sleep(loop, 1h);
}

TEST_F(TaskTest, DestroyingAPendingTaskFreesItsFrameAndSaysSoOnStderr) {
    EventLoop loop;
    const int alive = Counted::alive();
    std::optional<Task<void>> task = loop.create_task(hold_and_sleep(loop, Counted(1)), "sleeper");
    run_one_turn(loop);
    EXPECT_EQ(Counted::alive(), alive + 2);  // the parameter and the local, in the frame
    testing::internal::CaptureStderr();
    task.reset();  // the last handle
    const std::string errors = testing::internal::GetCapturedStderr();
    EXPECT_EQ(Counted::alive(), alive);
    EXPECT_NE(errors.find("Task was destroyed but it is pending!"), std::string::npos) << errors;
    EXPECT_NE(errors.find("name=sleeper"), std::string::npos) << errors;
    // Its sleep went with it, timer and all.
    expect_loop_is_clean(loop);
}

TEST_F(TaskTest, DestroyingTheLoopDestroysItsPendingTasks) {
    const int alive = Counted::alive();
    std::optional<Task<void>> survivor;  // a handle that outlives the loop
    std::string errors;
    {
        EventLoop loop;
        survivor = loop.create_task(hold_and_sleep(loop, Counted(1)));
        run_one_turn(loop);
        EXPECT_EQ(Counted::alive(), alive + 2);
        testing::internal::CaptureStderr();
    }
    errors = testing::internal::GetCapturedStderr();
    EXPECT_EQ(Counted::alive(), alive);
    EXPECT_NE(errors.find("Task was destroyed but it is pending!"), std::string::npos) << errors;
    EXPECT_FALSE(survivor->done());
    survivor.reset();  // nothing left to destroy, nothing more to say
}

TEST_F(TaskTest, ATaskPrintsItsStateAndTheChainOfWhatItWaitsFor) {
    EventLoop loop;
    Future<int> future(loop);
    Task<int> inner = loop.create_task(wait_for_value(future), "inner");
    Task<int> outer = loop.create_task(wait_for_value(inner), "outer");
    EXPECT_EQ(outer.to_string(), "<Task pending name=outer>");
    run_one_turn(loop);
    EXPECT_EQ(outer.to_string(), "<Task pending name=outer wait_for=<Task pending name=inner wait_for=<Future pending>>>");
    future.set_result(5);
    run_within(loop, outer);
    EXPECT_EQ(outer.to_string(), "<Task finished result=5 name=outer>");
}

Task<void> parent_of_quick_child(EventLoop& loop, Future<int> future, int* got, bool* cancelled_later) {
    *got = co_await wait_for_value(future);
    try {
        co_await sleep(loop, 1h);
    } catch (const CancelledError&) {
        *cancelled_later = true;
        throw;
    }
}

// The child finishes; before the parent's next step runs, the parent is cancelled. asyncio's rule
// would throw CancelledError at the parent's co_await and lose the child's result (think of an
// item the child took off a Queue). Here the parent gets the result, and the cancellation lands
// at its next wait.
TEST_F(TaskTest, AParentCancelledJustAfterItsChildFinishedStillGetsTheChildsResult) {
    EventLoop loop;
    Future<int> future(loop);
    int got = 0;
    bool cancelled_later = false;
    Task<void> parent = loop.create_task(parent_of_quick_child(loop, future, &got, &cancelled_later));
    run_one_turn(loop);   // parent and child are waiting
    future.set_result(7);
    run_one_turn(loop);   // the child finishes; the parent's step is scheduled
    EXPECT_TRUE(parent.cancel());
    EXPECT_THROW(run_within(loop, parent), CancelledError);
    EXPECT_EQ(got, 7);
    EXPECT_TRUE(cancelled_later);
}

Task<int> child_of(Future<int> future) { co_return co_await wait_for_value(future); }

Task<void> grandparent_then_sleep(EventLoop& loop, Future<int> future, int* got) {
    *got = co_await child_of(future);
    co_await sleep(loop, 1h);  // a lost cancel would leave us here, and run_within's watchdog fails
}

// A chain parent -> child -> grandchild -> future. The future finishes, and the completion climbs
// one task per turn; a cancel() of the parent in any of those turns must be thrown somewhere, not
// lost on the way down (a child that keeps it for its next suspension may have none left).
TEST_F(TaskTest, ACancelOfTheParentInAnyTurnWhileAResultClimbsTheChainIsNeverLost) {
    for (int turns = 0; turns <= 3; ++turns) {
        SCOPED_TRACE("cancelled " + std::to_string(turns) + " turn(s) after the future finished");
        EventLoop loop;
        Future<int> future(loop);
        int got = 0;
        Task<void> parent = loop.create_task(grandparent_then_sleep(loop, future, &got));
        run_one_turn(loop);  // all three wait
        future.set_result(9);
        for (int i = 0; i < turns; ++i) run_one_turn(loop);
        EXPECT_TRUE(parent.cancel());
        EXPECT_THROW(run_within(loop, parent, 2s), CancelledError);
        EXPECT_TRUE(parent.cancelled());
        // Cancelled before the grandchild stepped: the grandchild's co_await throws, and no result
        // climbs. After that, the finished work is kept and the parent's next wait is cancelled.
        EXPECT_EQ(got, turns == 0 ? 0 : 9);
        expect_loop_is_clean(loop);
    }
}

// A child that catches the CancelledError passed down to it and returns a value has used the
// cancel: the parent gets the value and goes on, as in asyncio.
Task<int> child_that_shrugs(Future<int> future) {
    try {
        co_return co_await future;
    } catch (const CancelledError&) {
        co_return -1;
    }
}

Task<int> parent_of_shrugging_child(EventLoop& loop, Future<int> future) {
    const int value = co_await child_that_shrugs(future);
    co_await sleep(loop, 1ms);
    co_return value;
}

TEST_F(TaskTest, ACancelThatAChildCaughtIsSpentAndDoesNotReachTheParentAgain) {
    EventLoop loop;
    Future<int> future(loop);
    Task<int> parent = loop.create_task(parent_of_shrugging_child(loop, future));
    run_one_turn(loop);
    EXPECT_TRUE(parent.cancel());
    EXPECT_EQ(run_within(loop, parent), -1);
}

// A cancel that reaches a task after the plain future it waits on has finished, but before its
// step, wins: the co_await throws CancelledError (asyncio's rule).
TEST_F(TaskTest, ACancelArrivingAfterAPlainFutureFinishedStillThrowsAtThatCoAwait) {
    EventLoop loop;
    Future<int> future(loop);
    Task<int> task = loop.create_task(wait_for_value(future));
    run_one_turn(loop);
    future.set_result(1);
    EXPECT_TRUE(task.cancel());
    EXPECT_THROW(run_within(loop, task), CancelledError);
}

Task<int> await_self(const std::optional<Task<int>>* self) { co_return co_await **self; }

TEST_F(TaskTest, ATaskThatAwaitsItselfGetsInvalidStateErrorInsteadOfWaitingForever) {
    EventLoop loop;
    std::optional<Task<int>> self;
    self = loop.create_task(await_self(&self));
    EXPECT_THROW(run_within(loop, *self), InvalidStateError);
}

Task<int> value_after_a_turn(EventLoop& loop, Counted counted) {
    co_await sleep(loop, Duration::zero());
    co_return counted.value;
}

// A class temporary (the Counted argument) inside a co_await expression lives in the frame across
// the suspension. This stage names aggregates and capturing lambdas in a local first (g++ 12 may
// destroy such temporaries twice, GCC PR 107288); this checks that the temporaries it does leave
// in co_await expressions are destroyed exactly once, whether the coroutine finishes or its frame
// is destroyed while it waits.
Task<int> await_with_a_temporary(EventLoop& loop) { co_return co_await value_after_a_turn(loop, Counted(3)); }

TEST_F(TaskTest, ATemporaryInACoAwaitExpressionIsDestroyedExactlyOnce) {
    EventLoop loop;
    const int alive = Counted::alive();
    EXPECT_EQ(run_within(loop, await_with_a_temporary(loop)), 3);
    EXPECT_EQ(Counted::alive(), alive);
    std::optional<Task<int>> abandoned = loop.create_task(await_with_a_temporary(loop));
    run_one_turn(loop);  // suspended, with its temporary alive in the frame
    EXPECT_GT(Counted::alive(), alive);
    testing::internal::CaptureStderr();
    abandoned.reset();
    testing::internal::GetCapturedStderr();
    EXPECT_EQ(Counted::alive(), alive);
}

Task<int> answer_through_a_plain_future() {
    Future<int> future = answer();  // a Task seen as a plain Future, not started yet
    co_return co_await future;
}

TEST_F(TaskTest, AnUnstartedTaskAwaitedThroughAPlainFutureHandleIsStartedToo) {
    EventLoop loop;
    EXPECT_EQ(run_within(loop, answer_through_a_plain_future()), 42);
}

Task<Counted> make_counted() { co_return Counted(5); }

Task<int> await_counted_twice(Task<Counted> shared) {
    const Counted first = co_await shared;   // others hold `shared`: copied out
    const Counted second = co_await shared;  // and again
    const Counted moved = co_await make_counted();  // the last handle: moved out
    co_return first.value + second.value + moved.value;
}

TEST_F(TaskTest, AResultIsCopiedForEachHolderButMovedOutOfTheLastHandle) {
    EventLoop loop;
    const int copies = Counted::copies;
    EXPECT_EQ(run_within(loop, await_counted_twice(make_counted())), 15);
    EXPECT_EQ(Counted::copies - copies, 2);
}

}  // namespace
}  // namespace sixways::coroutines
