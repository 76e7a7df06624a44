// gather, wait and wait_for: results in order, failures, cancellation, deadlines, and whose
// cancel it was.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "06_coroutines/gather.hpp"
#include "06_coroutines/sleep.hpp"
#include "06_coroutines/tests/helpers.hpp"
#include "06_coroutines/wait_for.hpp"

namespace sixways::coroutines {
namespace {

using namespace std::chrono_literals;
using testing_support::Counted;
using testing_support::expect_loop_is_clean;
using testing_support::run_one_turn;
using testing_support::run_within;

class GatherTest : public testing_support::LeakCheckedTest {};
class WaitForTest : public testing_support::LeakCheckedTest {};

Coroutine<int> value_after(EventLoop& loop, int value, Duration delay) {
    co_await sleep(loop, delay);
    co_return value;
}

Coroutine<int> fail_after(EventLoop& loop, Duration delay, const char* message = "child failed") {
    co_await sleep(loop, delay);
    throw std::runtime_error(message);
}

// Records how it ended: finished, or cancelled (and then it cleans up, which takes a turn).
Coroutine<int> sleep_and_record(EventLoop& loop, Duration delay, std::vector<std::string>* ends, Counted held) {
    try {
        co_await sleep(loop, delay);
    } catch (const CancelledError&) {
        ends->push_back("cancelled " + std::to_string(held.value));
        throw;
    }
    ends->push_back("finished " + std::to_string(held.value));
    co_return held.value;
}

TEST_F(GatherTest, ReturnsTheResultsInTheOrderGivenNotTheOrderTheyFinished) {
    EventLoop loop;
    std::vector<Task<int>> tasks;
    tasks.push_back(loop.create_task(value_after(loop, 1, 3ms)));
    tasks.push_back(loop.create_task(value_after(loop, 2, 1ms)));
    tasks.push_back(loop.create_task(value_after(loop, 3, 2ms)));
    EXPECT_EQ(run_within(loop, gather(loop, std::move(tasks))), (std::vector<int>{1, 2, 3}));
}

TEST_F(GatherTest, OfNothingReturnsNothingAtOnce) {
    EventLoop loop;
    EXPECT_TRUE(run_within(loop, gather(loop, std::vector<Task<int>>{})).empty());
    run_within(loop, gather(loop, std::vector<Task<void>>{}));
}

// We chose TaskGroup's rule over asyncio.gather's: the gather owns its tasks, so it does not leave
// them running when it fails. It cancels them, waits for them, then throws.
TEST_F(GatherTest, WithAFailingTaskCancelsTheOthersWaitsForThemAndThrowsTheFailure) {
    EventLoop loop;
    std::vector<std::string> ends;
    std::vector<Task<int>> tasks;
    tasks.push_back(loop.create_task(sleep_and_record(loop, 1h, &ends, Counted(1))));
    tasks.push_back(loop.create_task(fail_after(loop, 1ms)));
    tasks.push_back(loop.create_task(sleep_and_record(loop, 1h, &ends, Counted(3))));
    Task<int> kept = tasks[0];  // a handle of our own, to look at it afterwards
    EXPECT_THROW(run_within(loop, gather(loop, std::move(tasks))), std::runtime_error);
    EXPECT_EQ(ends, (std::vector<std::string>{"cancelled 1", "cancelled 3"}));  // both finished first
    EXPECT_TRUE(kept.cancelled());
    expect_loop_is_clean(loop);  // and nothing of theirs is left running
}

// Two tasks fail in one turn, the one later in the list first: the gather throws the failure that
// came first (as asyncio.gather does), not the one first in the list.
TEST_F(GatherTest, ThrowsTheFailureThatCameFirst) {
    EventLoop loop;
    Task<int> failing_first = loop.create_task(fail_after(loop, 0ms, "failed first"));  // steps first
    Task<int> failing_second = loop.create_task(fail_after(loop, 0ms, "failed second"));
    std::vector<Task<int>> tasks{failing_second, failing_first};
    try {
        run_within(loop, gather(loop, std::move(tasks)));
        ADD_FAILURE() << "the gather returned";
    } catch (const std::runtime_error& error) {
        EXPECT_STREQ(error.what(), "failed first");
    }
    EXPECT_TRUE(failing_first.done() && failing_second.done());
}

TEST_F(GatherTest, CancellingTheGatherCancelsEveryTaskAndWaitsForThem) {
    EventLoop loop;
    std::vector<std::string> ends;
    std::vector<Task<int>> tasks;
    tasks.push_back(loop.create_task(sleep_and_record(loop, 1h, &ends, Counted(1))));
    tasks.push_back(loop.create_task(sleep_and_record(loop, 1h, &ends, Counted(2))));
    Task<std::vector<int>> gathering = loop.create_task(gather(loop, std::move(tasks)));
    run_one_turn(loop);  // the tasks are sleeping, the gather waits for them
    EXPECT_TRUE(gathering.cancel());
    EXPECT_THROW(run_within(loop, gathering), CancelledError);
    EXPECT_TRUE(gathering.cancelled());
    EXPECT_EQ(ends, (std::vector<std::string>{"cancelled 1", "cancelled 2"}));
    expect_loop_is_clean(loop);
}

TEST_F(GatherTest, AcceptsTasksThatAreDoneAlready) {
    EventLoop loop;
    std::vector<Task<int>> tasks;
    tasks.push_back(loop.create_task(value_after(loop, 7, 0ms)));
    run_within(loop, tasks[0]);
    tasks.push_back(loop.create_task(value_after(loop, 8, 0ms)));
    EXPECT_EQ(run_within(loop, gather(loop, std::move(tasks))), (std::vector<int>{7, 8}));
}

// asyncio.wait: every task keeps its own outcome, and a failure cancels nothing.
TEST_F(GatherTest, WaitWaitsForEveryTaskWhateverItsOutcome) {
    EventLoop loop;
    std::vector<std::string> ends;
    std::vector<Task<int>> tasks;
    tasks.push_back(loop.create_task(sleep_and_record(loop, 2ms, &ends, Counted(1))));
    tasks.push_back(loop.create_task(fail_after(loop, 1ms)));
    tasks.push_back(loop.create_task(sleep_and_record(loop, 1h, &ends, Counted(3))));
    tasks[2].cancel();
    run_within(loop, wait(loop, tasks));
    EXPECT_EQ(tasks[0].result(), 1);
    EXPECT_THROW(tasks[1].result(), std::runtime_error);
    EXPECT_TRUE(tasks[2].cancelled());
    EXPECT_EQ(ends, (std::vector<std::string>{"finished 1"}));  // the third never started
}

TEST_F(WaitForTest, ReturnsTheResultOfACoroutineThatFinishesInTime) {
    EventLoop loop;
    EXPECT_EQ(run_within(loop, wait_for(loop, value_after(loop, 5, 1ms), 1h)), 5);
    expect_loop_is_clean(loop);  // the deadline's timer went with the wait
}

Coroutine<std::string> outcome_of_wait_for(EventLoop& loop, Coroutine<int> work, Duration timeout) {
    try {
        co_await wait_for(loop, std::move(work), timeout);
    } catch (const TimeoutError&) {
        co_return "timed out";
    }
    co_return "finished";
}

TEST_F(WaitForTest, AtTheDeadlineCancelsTheCoroutineWhichHasUnwoundWhenTimeoutErrorIsThrown) {
    EventLoop loop;
    std::vector<std::string> ends;
    const int alive = Counted::alive();
    EXPECT_EQ(run_within(loop, outcome_of_wait_for(loop, sleep_and_record(loop, 1h, &ends, Counted(1)), 5ms)),
              "timed out");
    // When wait_for threw, the coroutine had finished: its cleanup ran, its frame is gone.
    EXPECT_EQ(ends, (std::vector<std::string>{"cancelled 1"}));
    EXPECT_EQ(Counted::alive(), alive);
    expect_loop_is_clean(loop);  // no timer left
}

TEST_F(WaitForTest, CancellingTheTaskInsideWaitForGivesCancelledErrorNotTimeoutError) {
    EventLoop loop;
    std::vector<std::string> ends;
    Task<std::string> waiting = loop.create_task(outcome_of_wait_for(loop, sleep_and_record(loop, 1h, &ends, Counted(1)), 1h));
    run_one_turn(loop);
    waiting.cancel();
    EXPECT_THROW(run_within(loop, waiting), CancelledError);
    EXPECT_EQ(ends, (std::vector<std::string>{"cancelled 1"}));
    expect_loop_is_clean(loop);
}

Coroutine<int> finish_despite_cancel(EventLoop& loop) {
    try {
        co_await sleep(loop, 1h);
    } catch (const CancelledError&) {
    }
    co_return 9;
}

TEST_F(WaitForTest, ReturnsTheResultOfACoroutineThatFinishedAnywayAfterTheDeadlineCancelledIt) {
    EventLoop loop;
    EXPECT_EQ(run_within(loop, wait_for(loop, finish_despite_cancel(loop), 1ms)), 9);
}

// Its own deadline alone: TimeoutError, and the task's count of cancel requests is back to what it
// was, so that the task is not taken for a cancelled one later.
Coroutine<int> cancelling_after_a_timeout(EventLoop& loop) {
    try {
        co_await wait_for(loop, sleep(loop, 1h), 0ms);
    } catch (const TimeoutError&) {
        co_return loop.current_task()->cancelling();
    }
    co_return -1;
}

TEST_F(WaitForTest, ItsOwnDeadlineAloneGivesTimeoutErrorAndLeavesNoCancelRequestBehind) {
    EventLoop loop;
    EXPECT_EQ(run_within(loop, cancelling_after_a_timeout(loop)), 0);
}

// Someone cancels the task in the very turn its deadline fires. Both cancels reach the task before
// its next step; the CancelledError must not become a TimeoutError, which the code around would
// take for a timeout and carry on.
Coroutine<std::string> carry_on_after_a_timeout(EventLoop& loop, bool* carried_on) {
    try {
        co_await wait_for(loop, sleep(loop, 1h), 0ms);
    } catch (const TimeoutError&) {
        *carried_on = true;
        co_return "carried on after the timeout";
    }
    co_return "finished";
}

TEST_F(WaitForTest, ACancelFromOutsideInTheTurnTheDeadlineFiresIsNotTurnedIntoATimeout) {
    EventLoop loop;
    bool carried_on = false;
    Task<std::string> task = loop.create_task(carry_on_after_a_timeout(loop, &carried_on));
    run_one_turn(loop);  // it waits; its deadline (0 ms) is due on the next turn
    // On the next turn this callback runs first, then the deadline's timer, then the task's step.
    loop.call_soon([&task] { task.cancel(); });
    EXPECT_THROW(run_within(loop, task), CancelledError);
    EXPECT_FALSE(carried_on);
    EXPECT_EQ(task.cancelling(), 1);  // the outside request; the deadline's was taken back
    expect_loop_is_clean(loop);
}

}  // namespace
}  // namespace sixways::coroutines
