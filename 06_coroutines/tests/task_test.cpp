// Coroutine and Task: running a coroutine inside a task or as a task of its own, results and
// exceptions through co_await, cancellation, and what happens to a task destroyed while pending.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "06_coroutines/sleep.hpp"
#include "06_coroutines/task.hpp"
#include "06_coroutines/tests/helpers.hpp"
#include "common/explain.hpp"

namespace sixways::coroutines {
namespace {

using namespace std::chrono_literals;
using testing_support::Counted;
using testing_support::expect_loop_is_clean;
using testing_support::run_one_turn;
using testing_support::run_within;

class TaskTest : public testing_support::LeakCheckedTest {};

Coroutine<void> mark_started(bool* started) {
    *started = true;
    co_return;
}

Coroutine<int> answer() { co_return 42; }

Coroutine<int> wait_for_value(Future<int> future) { co_return co_await future; }

TEST_F(TaskTest, ACoroutineRunsNothingUntilItIsRunAndATaskStartsOnTheNextTurn) {
    EventLoop loop;
    bool started = false;
    Coroutine<void> coroutine = mark_started(&started);
    EXPECT_FALSE(started);  // calling a coroutine function only makes its frame
    Task<void> task = loop.create_task(std::move(coroutine));
    EXPECT_FALSE(started);  // create_task schedules the first step, for the next turn
    EXPECT_FALSE(task.done());
    run_one_turn(loop);
    EXPECT_TRUE(started);
    EXPECT_TRUE(task.done());
}

TEST_F(TaskTest, RunUntilCompleteOfACoroutineReturnsItsResult) {
    EventLoop loop;
    EXPECT_EQ(loop.run_until_complete(answer()), 42);
}

Coroutine<int> twice(Task<int> awaited) { co_return 2 * co_await awaited; }

TEST_F(TaskTest, ATaskIsAFutureThatAnotherTaskCanAwait) {
    EventLoop loop;
    Future<int> future(loop);
    Task<int> inner = loop.create_task(wait_for_value(future));
    Task<int> outer = loop.create_task(twice(inner));
    run_one_turn(loop);
    future.set_result(21);
    EXPECT_EQ(run_within(loop, outer), 42);
    EXPECT_EQ(inner.result(), 21);
}

Coroutine<int> log_and_answer(EventLoop& loop, std::vector<std::string>* log, TaskBase* parent_task) {
    log->push_back(loop.current_task() == parent_task ? "child, in the parent's task" : "child, elsewhere");
    co_return 1;
}

Coroutine<int> parent_logging(EventLoop& loop, std::vector<std::string>* log) {
    loop.call_soon([log] { log->push_back("callback"); });
    log->push_back("parent before");
    const int x = co_await log_and_answer(loop, log, loop.current_task());
    log->push_back("parent after");
    co_return x;
}

TEST_F(TaskTest, AwaitingACoroutineRunsItAtOnceInsideTheAwaitingTask) {
    EventLoop loop;
    std::vector<std::string> log;
    EXPECT_EQ(run_within(loop, parent_logging(loop, &log)), 1);
    run_one_turn(loop);
    // The child ran and returned within the parent's step: the callback scheduled before it, for
    // the next turn, came after both.
    EXPECT_EQ(log, (std::vector<std::string>{"parent before", "child, in the parent's task", "parent after",
                                             "callback"}));
    EXPECT_EQ(loop.current_task(), nullptr);  // between steps
}

Coroutine<int> immediate(int i) { co_return i; }

Coroutine<long> sum_of_immediate_coroutines(int count) {
    long sum = 0;
    for (int i = 0; i < count; ++i) sum += co_await immediate(i);
    co_return sum;
}

Coroutine<long> sum_of_done_futures(EventLoop& loop, int count) {
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
    EXPECT_EQ(loop.run_until_complete(sum_of_immediate_coroutines(count)), expected);
    EXPECT_EQ(loop.run_until_complete(sum_of_done_futures(loop, count)), expected);
}

Coroutine<int> nested(Future<int> bottom, int depth) {
    if (depth == 0) co_return co_await bottom;
    co_return 1 + co_await nested(bottom, depth - 1);
}

TEST_F(TaskTest, AResultClimbsAThousandNestedCoroutinesInOneStep) {
    EventLoop loop;
    Future<int> bottom(loop);
    Task<int> top = loop.create_task(nested(bottom, 1000));
    run_one_turn(loop);  // one task, a thousand frames, the top one waiting
    EXPECT_FALSE(top.done());
    bottom.set_result(0);
    run_one_turn(loop);  // the task's next step runs them all to the end
    ASSERT_TRUE(top.done());
    EXPECT_EQ(top.result(), 1000);
}

Coroutine<int> fails_after(EventLoop& loop, Duration delay) {
    if (delay > Duration::zero()) co_await sleep(loop, delay);
    throw std::runtime_error("from the bottom");
}

Coroutine<int> middle(EventLoop& loop, Duration delay) { co_return co_await fails_after(loop, delay) + 1; }

Coroutine<std::string> top_catches(EventLoop& loop, Duration delay) {
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

Coroutine<void> sleep_for_an_hour(EventLoop& loop, bool* saw_cancel, Counted held) {
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

// A sleep of Duration::max() means "until cancelled": a deadline that overflowed into the past
// would end it at once.
TEST_F(TaskTest, ASleepOfDurationMaxLastsUntilItIsCancelled) {
    EventLoop loop;
    Task<void> task = loop.create_task(sleep(loop, Duration::max()));
    run_one_turn(loop);
    run_one_turn(loop);
    EXPECT_FALSE(task.done());
    task.cancel();
    EXPECT_THROW(run_within(loop, task), CancelledError);
    expect_loop_is_clean(loop);
}

Coroutine<int> shrugs_off_cancel(EventLoop& loop) {
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
    EXPECT_EQ(task.cancelling(), 1);  // the request stays counted until someone takes it back
    EXPECT_EQ(task.uncancel(), 0);
}

TEST_F(TaskTest, ATaskCancelledBeforeItsFirstStepNeverRuns) {
    EventLoop loop;
    bool started = false;
    Task<void> task = loop.create_task(mark_started(&started));
    EXPECT_TRUE(task.cancel());
    EXPECT_THROW(run_within(loop, task), CancelledError);
    EXPECT_FALSE(started);
}

// A task that cancels itself: the co_await of a done future goes on (it does not suspend), the
// next co_await that suspends throws.
Coroutine<std::string> cancel_self_then_wait(EventLoop& loop, std::vector<std::string>* log) {
    loop.current_task()->cancel();
    Future<int> done(loop);
    done.set_result(1);
    co_await done;
    log->push_back("past the done future");
    try {
        co_await sleep(loop, 1h);
    } catch (const CancelledError&) {
        log->push_back("cancelled at the sleep");
        throw;
    }
    co_return "slept";
}

TEST_F(TaskTest, ATaskCancelledWhileItRunsThrowsAtItsNextCoAwaitThatSuspends) {
    EventLoop loop;
    std::vector<std::string> log;
    Task<std::string> task = loop.create_task(cancel_self_then_wait(loop, &log));
    EXPECT_THROW(run_within(loop, task), CancelledError);
    EXPECT_EQ(log, (std::vector<std::string>{"past the done future", "cancelled at the sleep"}));
    expect_loop_is_clean(loop);
}

Coroutine<int> cancel_self_and_return(EventLoop& loop) {
    loop.current_task()->cancel();
    co_return 5;
}

// asyncio's rule: a cancel() that came too late to be thrown still makes the task cancelled.
TEST_F(TaskTest, ATaskThatIsCancelledWhileItRunsAndFinishesFirstEndsCancelled) {
    EventLoop loop;
    Task<int> task = loop.create_task(cancel_self_and_return(loop));
    EXPECT_THROW(run_within(loop, task), CancelledError);
    EXPECT_TRUE(task.cancelled());
}

Coroutine<void> hold_and_sleep(EventLoop& loop, Counted held) {
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

Coroutine<int> wait_for_task(Task<int> task) { co_return co_await task; }

TEST_F(TaskTest, ATaskPrintsItsStateAndTheChainOfWhatItWaitsFor) {
    EventLoop loop;
    Future<int> future(loop);
    Task<int> inner = loop.create_task(wait_for_value(future), "inner");
    Task<int> outer = loop.create_task(wait_for_task(inner), "outer");
    EXPECT_EQ(outer.to_string(), "<Task pending name=outer>");
    run_one_turn(loop);
    EXPECT_EQ(outer.to_string(), "<Task pending name=outer wait_for=<Task pending name=inner wait_for=<Future pending>>>");
    future.set_result(5);
    run_within(loop, outer);
    EXPECT_EQ(outer.to_string(), "<Task finished name=outer>");
}

// A cancel that reaches a task after the future it waits on has finished, but before its step,
// wins: the co_await throws CancelledError (asyncio's rule).
TEST_F(TaskTest, ACancelArrivingAfterTheAwaitedFutureFinishedStillThrowsAtThatCoAwait) {
    EventLoop loop;
    Future<int> future(loop);
    Task<int> task = loop.create_task(wait_for_value(future));
    run_one_turn(loop);
    future.set_result(1);
    EXPECT_TRUE(task.cancel());
    EXPECT_THROW(run_within(loop, task), CancelledError);
}

Coroutine<int> await_task(const std::optional<Task<int>>* task) { co_return co_await **task; }

TEST_F(TaskTest, ATaskThatAwaitsItselfGetsInvalidStateErrorInsteadOfWaitingForever) {
    EventLoop loop;
    std::optional<Task<int>> self;
    self = loop.create_task(await_task(&self));
    EXPECT_THROW(run_within(loop, *self), InvalidStateError);
}

// A waits for B and B for A: nothing can ever finish either. The loop runs out of work and says so
// (no watchdog here: its timer would be work left to wait for). A cancel goes once round the cycle
// and stops: it wakes A and cancels what A awaits, B, which wakes B and cancels A once more. Both
// co_awaits throw, and both tasks end cancelled.
TEST_F(TaskTest, TwoTasksThatAwaitEachOtherAreReportedAndACancelEndsBoth) {
    EventLoop loop;
    std::optional<Task<int>> a;
    std::optional<Task<int>> b;
    a = loop.create_task(await_task(&b));
    b = loop.create_task(await_task(&a));
    EXPECT_THROW(loop.run_until_complete(*a), std::logic_error);
    EXPECT_EQ(a->to_string(), "<Task pending name=Task-1 wait_for=<Task pending name=Task-2 wait_for=<Task pending name=Task-1>>>");
    EXPECT_TRUE(a->cancel());
    EXPECT_EQ(a->cancelling(), 2);  // its own request, and the one that came back round
    EXPECT_EQ(b->cancelling(), 1);
    EXPECT_THROW(loop.run_until_complete(*a), CancelledError);
    EXPECT_TRUE(b->cancelled());
    expect_loop_is_clean(loop);
}

Coroutine<int> value_after_a_turn(EventLoop& loop, Counted counted) {
    co_await sleep(loop, Duration::zero());
    co_return counted.value;
}

// A class temporary (the Counted argument) inside a co_await expression lives in the frame across
// the suspension. This stage names aggregates and capturing lambdas in a local first (g++ 12 may
// destroy such temporaries twice, GCC PR 107288); this checks that the temporaries it does leave
// in co_await expressions are destroyed exactly once, whether the coroutine finishes or its frame
// is destroyed while it waits.
Coroutine<int> await_with_a_temporary(EventLoop& loop) { co_return co_await value_after_a_turn(loop, Counted(3)); }

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

Coroutine<Counted> make_counted() { co_return Counted(5); }

Coroutine<int> await_counted_twice(EventLoop& loop) {
    Task<Counted> shared = loop.create_task(make_counted());
    const Counted first = co_await shared;   // `shared` still holds the result: copied out
    const Counted second = co_await shared;  // and again
    const Counted moved = co_await make_counted();  // a coroutine's result has one owner: moved out
    co_return first.value + second.value + moved.value;
}

TEST_F(TaskTest, AResultIsCopiedForEachHolderButMovedOutOfACoroutine) {
    EventLoop loop;
    const int copies = Counted::copies;
    EXPECT_EQ(run_within(loop, await_counted_twice(loop)), 15);
    EXPECT_EQ(Counted::copies - copies, 2);
}

// asyncio checks "already running" before it adds its done callback: a refused call leaves the
// running loop alone.
Coroutine<int> refuse_a_nested_run(EventLoop& loop, bool* refused) {
    Future<int> done(loop);
    done.set_result(1);
    try {
        loop.run_until_complete(done);
    } catch (const std::logic_error&) {
        *refused = true;
    }
    co_await sleep(loop, 0ms);
    co_await sleep(loop, 0ms);
    co_return 7;
}

TEST_F(TaskTest, ARefusedNestedRunUntilCompleteLeavesTheRunningLoopRunning) {
    EventLoop loop;
    bool refused = false;
    EXPECT_EQ(run_within(loop, refuse_a_nested_run(loop, &refused)), 7);
    EXPECT_TRUE(refused);
}

Coroutine<int> sleep_then_return(EventLoop& loop, int value) {
    co_await sleep(loop, 0ms);
    co_return value;
}

// asyncio: Task.set_result raises. A task's result is what its coroutine returns, also through a
// Future handle to it.
TEST_F(TaskTest, ATaskCannotBeFinishedFromOutsideThroughItsFutureHandle) {
    EventLoop loop;
    Task<int> task = loop.create_task(sleep_then_return(loop, 5));
    Future<int>& future = task;
    EXPECT_THROW(future.set_result(99), InvalidStateError);
    EXPECT_THROW(future.set_exception(std::make_exception_ptr(std::runtime_error("no"))), InvalidStateError);
    EXPECT_FALSE(task.done());
    EXPECT_EQ(run_within(loop, static_cast<Future<int>>(task)), 5);
}

Coroutine<bool> take_pointer(Future<std::unique_ptr<int>> future) {
    std::unique_ptr<int> value = co_await future;
    co_return value != nullptr && *value == 8;
}

Coroutine<int> two_takers(EventLoop& loop) {
    Future<std::unique_ptr<int>> future(loop);
    Task<bool> first = loop.create_task(take_pointer(future));
    Task<bool> second = loop.create_task(take_pointer(future));
    co_await sleep(loop, 0ms);  // both wait now
    future.set_result(std::make_unique<int>(8));
    int got = 0;
    try {
        got += co_await first ? 1 : 0;
    } catch (const InvalidStateError&) {
        got += 10;
    }
    try {
        got += co_await second ? 1 : 0;
    } catch (const InvalidStateError&) {
        got += 10;
    }
    co_return got;
}

// A result that cannot be copied goes to the first taker; the next one is told, never handed a
// moved-from value.
TEST_F(TaskTest, AMoveOnlyResultGoesToItsFirstTakerAndASecondGetsInvalidStateError) {
    EventLoop loop;
    EXPECT_EQ(run_within(loop, two_takers(loop)), 11);
}


Coroutine<int> first_letter(const char* word) { co_return word[0]; }

Coroutine<int> spell(EventLoop&) { co_return co_await first_letter("Ada"); }

// --explain names each frame after its coroutine function. The compiler makes a promise from the
// coroutine's own arguments when it can: a lone `const char*` argument must not become the name.
TEST_F(TaskTest, AFrameIsNamedAfterItsFunctionEvenWhenItsArgumentIsAString) {
    EventLoop loop;
    testing::internal::CaptureStdout();
    explain::start(true, false);
    const int letter = loop.run_until_complete(spell(loop));
    explain::start(false, false);
    const std::string narration = testing::internal::GetCapturedStdout();
    EXPECT_EQ(letter, 'A');
    EXPECT_NE(narration.find("spell awaits first_letter"), std::string::npos) << narration;
    EXPECT_EQ(narration.find("Ada"), std::string::npos) << narration;
}

}  // namespace
}  // namespace sixways::coroutines
