// gather and wait_for: results in order, failures, return_exceptions, cancellation, deadlines.
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

Task<int> value_after(EventLoop& loop, int value, Duration delay) {
    co_await sleep(loop, delay);
    co_return value;
}

Task<int> fail_after(EventLoop& loop, Duration delay) {
    co_await sleep(loop, delay);
    throw std::runtime_error("child failed");
}

// Records how it ended: finished, or cancelled (and then it cleans up, which takes a turn).
Task<int> sleep_and_record(EventLoop& loop, Duration delay, std::vector<std::string>* ends, Counted held) {
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
    std::vector<Task<int>> children;
    children.push_back(value_after(loop, 1, 3ms));
    children.push_back(value_after(loop, 2, 1ms));
    children.push_back(value_after(loop, 3, 2ms));
    EXPECT_EQ(run_within(loop, gather(loop, std::move(children))), (std::vector<int>{1, 2, 3}));
}

TEST_F(GatherTest, OfNothingReturnsNothingAtOnce) {
    EventLoop loop;
    EXPECT_TRUE(run_within(loop, gather(loop, std::vector<Task<int>>{})).empty());
    run_within(loop, gather(loop, std::vector<Task<void>>{}));
}

// We chose TaskGroup's rule over asyncio.gather's: the gather owns its children, so it does not
// leave them running when it fails. It cancels them, waits for them, then throws.
TEST_F(GatherTest, WithAFailingChildCancelsTheOthersWaitsForThemAndThrowsTheFailure) {
    EventLoop loop;
    std::vector<std::string> ends;
    std::vector<Task<int>> children;
    children.push_back(sleep_and_record(loop, 1h, &ends, Counted(1)));
    children.push_back(fail_after(loop, 1ms));
    children.push_back(sleep_and_record(loop, 1h, &ends, Counted(3)));
    Task<int> kept = children[0];  // a handle of our own, to look at it afterwards
    EXPECT_THROW(run_within(loop, gather(loop, std::move(children))), std::runtime_error);
    EXPECT_EQ(ends, (std::vector<std::string>{"cancelled 1", "cancelled 3"}));  // both finished first
    EXPECT_TRUE(kept.cancelled());
    expect_loop_is_clean(loop);  // and nothing of theirs is left running
}

TEST_F(GatherTest, WithReturnExceptionsLetsEveryChildFinishAndReturnsEachOutcomeInOrder) {
    EventLoop loop;
    std::vector<std::string> ends;
    std::vector<Task<int>> children;
    children.push_back(sleep_and_record(loop, 2ms, &ends, Counted(1)));
    children.push_back(fail_after(loop, 1ms));
    children.push_back(value_after(loop, 3, 3ms));
    const std::vector<Outcome<int>> outcomes =
        run_within(loop, gather(loop, std::move(children), return_exceptions));
    ASSERT_EQ(outcomes.size(), 3u);
    EXPECT_TRUE(outcomes[0].ok());
    EXPECT_EQ(outcomes[0].value(), 1);
    EXPECT_FALSE(outcomes[1].ok());
    EXPECT_THROW(outcomes[1].value(), std::runtime_error);
    EXPECT_EQ(outcomes[2].value(), 3);
    EXPECT_EQ(ends, (std::vector<std::string>{"finished 1"}));
}

TEST_F(GatherTest, WithReturnExceptionsReportsACancelledChildAsCancelledError) {
    EventLoop loop;
    std::vector<Task<void>> children;
    children.push_back(loop.create_task(sleep(loop, 1h)));
    children.push_back(loop.create_task(sleep(loop, 1ms)));
    children[0].cancel();
    const std::vector<Outcome<void>> outcomes =
        run_within(loop, gather(loop, std::move(children), return_exceptions));
    EXPECT_THROW(outcomes[0].value(), CancelledError);
    EXPECT_TRUE(outcomes[1].ok());
}

TEST_F(GatherTest, CancellingTheGatherCancelsEveryChildAndWaitsForThem) {
    EventLoop loop;
    std::vector<std::string> ends;
    std::vector<Task<int>> children;
    children.push_back(sleep_and_record(loop, 1h, &ends, Counted(1)));
    children.push_back(sleep_and_record(loop, 1h, &ends, Counted(2)));
    Task<std::vector<int>> gathering = loop.create_task(gather(loop, std::move(children)));
    run_one_turn(loop);
    run_one_turn(loop);  // the children have started and are sleeping
    EXPECT_TRUE(gathering.cancel());
    EXPECT_THROW(run_within(loop, gathering), CancelledError);
    EXPECT_TRUE(gathering.cancelled());
    EXPECT_EQ(ends, (std::vector<std::string>{"cancelled 1", "cancelled 2"}));
    expect_loop_is_clean(loop);
}

TEST_F(GatherTest, WaitsForTasksThatWereStartedAlready) {
    EventLoop loop;
    std::vector<Task<int>> children;
    children.push_back(loop.create_task(value_after(loop, 7, 1ms)));
    children.push_back(value_after(loop, 8, 0ms));
    EXPECT_EQ(run_within(loop, gather(loop, std::move(children))), (std::vector<int>{7, 8}));
}

TEST_F(WaitForTest, ReturnsTheResultOfATaskThatFinishesInTime) {
    EventLoop loop;
    EXPECT_EQ(run_within(loop, wait_for(loop, value_after(loop, 5, 1ms), 1h)), 5);
}

TEST_F(WaitForTest, AtTheDeadlineCancelsTheTaskWaitsUntilItHasFinishedThenThrowsTimeoutError) {
    EventLoop loop;
    std::vector<std::string> ends;
    Task<int> slow = loop.create_task(sleep_and_record(loop, 1h, &ends, Counted(1)));
    const int alive = Counted::alive();
    EXPECT_THROW(run_within(loop, wait_for(loop, slow, 5ms)), TimeoutError);
    // When wait_for threw, the task had finished: its cleanup ran, its frame is gone.
    EXPECT_TRUE(slow.cancelled());
    EXPECT_EQ(ends, (std::vector<std::string>{"cancelled 1"}));
    EXPECT_EQ(Counted::alive(), alive - 1);
    expect_loop_is_clean(loop);  // no running child, no timer left
}

TEST_F(WaitForTest, CancellingWaitForCancelsTheTaskToo) {
    EventLoop loop;
    std::vector<std::string> ends;
    Task<int> slow = loop.create_task(sleep_and_record(loop, 1h, &ends, Counted(1)));
    Task<int> waiting = loop.create_task(wait_for(loop, slow, 1h));
    run_one_turn(loop);
    waiting.cancel();
    EXPECT_THROW(run_within(loop, waiting), CancelledError);  // not TimeoutError
    EXPECT_TRUE(slow.cancelled());
    EXPECT_EQ(ends, (std::vector<std::string>{"cancelled 1"}));
}

Task<int> finish_despite_cancel(EventLoop& loop) {
    try {
        co_await sleep(loop, 1h);
    } catch (const CancelledError&) {
    }
    co_return 9;
}

TEST_F(WaitForTest, ReturnsTheResultOfATaskThatFinishedAnywayAfterTheDeadlineCancelledIt) {
    EventLoop loop;
    EXPECT_EQ(run_within(loop, wait_for(loop, finish_despite_cancel(loop), 1ms)), 9);
}

}  // namespace
}  // namespace sixways::coroutines
