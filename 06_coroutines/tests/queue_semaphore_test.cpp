// Queue and Semaphore: waiting, fairness, join/task_done, and the hard case of a waiter that is
// woken and then cancelled (or destroyed) before it could use its turn.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "06_coroutines/gather.hpp"
#include "06_coroutines/queue.hpp"
#include "06_coroutines/optional/semaphore.hpp"
#include "06_coroutines/sleep.hpp"
#include "06_coroutines/tests/helpers.hpp"

namespace sixways::coroutines {
namespace {

using namespace std::chrono_literals;
using testing_support::Counted;
using testing_support::expect_loop_is_clean;
using testing_support::run_one_turn;
using testing_support::run_within;

class QueueTest : public testing_support::LeakCheckedTest {};
class SemaphoreTest : public testing_support::LeakCheckedTest {};

Coroutine<int> get_one(Queue<int>* queue) { co_return co_await queue->get(); }

TEST_F(QueueTest, GivesItemsFirstInFirstOut) {
    EventLoop loop;
    Queue<int> queue(loop);
    for (int i = 1; i <= 3; ++i) queue.put_nowait(i);
    EXPECT_EQ(queue.size(), 3u);
    EXPECT_EQ(run_within(loop, get_one(&queue)), 1);
    EXPECT_EQ(queue.get_nowait(), 2);
    EXPECT_EQ(run_within(loop, get_one(&queue)), 3);
    EXPECT_TRUE(queue.empty());
}

TEST_F(QueueTest, GetNowaitOnAnEmptyQueueThrowsQueueEmpty) {
    EventLoop loop;
    Queue<int> queue(loop);
    EXPECT_THROW(queue.get_nowait(), QueueEmpty);
}

TEST_F(QueueTest, GetWaitsWhileTheQueueIsEmptyAndGettersAreServedInArrivalOrder) {
    EventLoop loop;
    Queue<int> queue(loop);
    Task<int> first = loop.create_task(get_one(&queue));
    Task<int> second = loop.create_task(get_one(&queue));
    run_one_turn(loop);
    EXPECT_FALSE(first.done());
    queue.put_nowait(10);
    queue.put_nowait(20);
    EXPECT_EQ(run_within(loop, second), 20);
    EXPECT_EQ(first.result(), 10);
}

TEST_F(QueueTest, CancellingAWaitingGetTakesNothingAndLeavesNoTrace) {
    EventLoop loop;
    Queue<int> queue(loop);
    Task<int> cancelled = loop.create_task(get_one(&queue));
    run_one_turn(loop);
    cancelled.cancel();
    EXPECT_THROW(run_within(loop, cancelled), CancelledError);
    queue.put_nowait(5);
    EXPECT_EQ(run_within(loop, get_one(&queue)), 5);
}

// put_nowait wakes exactly one getter, the first. If that getter is cancelled before it runs, the
// wake-up must go to the next getter, or the item would sit in the queue while it waits for ever.
TEST_F(QueueTest, AGetterWokenAndThenCancelledPassesItsWakeUpToTheNextGetter) {
    EventLoop loop;
    Queue<int> queue(loop);
    Task<int> first = loop.create_task(get_one(&queue));
    Task<int> second = loop.create_task(get_one(&queue));
    run_one_turn(loop);
    queue.put_nowait(1);  // wakes `first`, whose step is now scheduled
    first.cancel();
    EXPECT_THROW(run_within(loop, first), CancelledError);
    EXPECT_EQ(run_within(loop, second), 1);
}

TEST_F(QueueTest, AGetterWokenAndThenDestroyedPassesItsWakeUpOnToo) {
    EventLoop loop;
    Queue<int> queue(loop);
    std::optional<Task<int>> first = loop.create_task(get_one(&queue));
    Task<int> second = loop.create_task(get_one(&queue));
    run_one_turn(loop);
    queue.put_nowait(1);
    testing::internal::CaptureStderr();
    first.reset();  // pending: destroyed, with the usual warning
    testing::internal::GetCapturedStderr();
    EXPECT_EQ(run_within(loop, second), 1);
}

TEST_F(QueueTest, HoldsItemsThatAreNotCopyableAndDestroysWhatIsLeft) {
    EventLoop loop;
    const int alive = Counted::alive();
    {
        Queue<std::unique_ptr<Counted>> queue(loop);
        queue.put_nowait(std::make_unique<Counted>(1));
        queue.put_nowait(std::make_unique<Counted>(2));
        auto take = [](Queue<std::unique_ptr<Counted>>* q) -> Coroutine<int> {
            std::unique_ptr<Counted> item = co_await q->get();
            co_return item->value;
        };
        EXPECT_EQ(run_within(loop, take(&queue)), 1);
        EXPECT_EQ(Counted::alive(), alive + 1);
    }
    EXPECT_EQ(Counted::alive(), alive);
}

Coroutine<void> worker(Queue<int>* queue, std::vector<int>* done) {
    for (;;) {
        const int item = co_await queue->get();
        done->push_back(item);
        queue->task_done();
    }
}

Coroutine<void> join_then_stop_workers(Queue<int>* queue, std::vector<Task<void>>* workers) {
    co_await queue->join();
    for (Task<void>& w : *workers) w.cancel();
}

// The 500 Lines crawler's shape: workers take items until join() sees every item done, then
// the idle workers are cancelled.
TEST_F(QueueTest, JoinWaitsUntilEveryItemPutHasBeenMarkedDone) {
    EventLoop loop;
    Queue<int> queue(loop);
    std::vector<int> done;
    std::vector<Task<void>> workers;
    for (int i = 0; i < 3; ++i) workers.push_back(loop.create_task(worker(&queue, &done)));
    for (int i = 0; i < 10; ++i) queue.put_nowait(i);
    run_within(loop, join_then_stop_workers(&queue, &workers));
    EXPECT_EQ(done.size(), 10u);
    for (Task<void>& w : workers) {
        EXPECT_THROW(run_within(loop, w), CancelledError);
    }
    run_within(loop, queue.join());  // nothing unfinished: returns at once
    EXPECT_THROW(queue.task_done(), std::logic_error);  // more task_done() than items
}

Coroutine<void> hold_slot(EventLoop& loop, Semaphore* slots, int* inside, int* most_inside) {
    Semaphore::Guard slot = co_await slots->guard();
    *most_inside = std::max(*most_inside, ++*inside);
    co_await sleep(loop, 1ms);
    --*inside;
}

TEST_F(SemaphoreTest, LetsAtMostItsValueOfTasksInAtOnce) {
    EventLoop loop;
    Semaphore slots(loop, 3);
    int inside = 0;
    int most_inside = 0;
    std::vector<Task<void>> tasks;
    for (int i = 0; i < 10; ++i) tasks.push_back(loop.create_task(hold_slot(loop, &slots, &inside, &most_inside)));
    run_within(loop, gather(loop, std::move(tasks)));
    EXPECT_EQ(most_inside, 3);
    EXPECT_EQ(slots.value(), 3u);
}

Coroutine<void> acquire_and_log(Semaphore* slots, std::vector<int>* order, int id) {
    co_await slots->acquire();
    order->push_back(id);
}

TEST_F(SemaphoreTest, ServesWaitersFirstComeFirstServedAndNewcomersQueueBehindThem) {
    EventLoop loop;
    Semaphore slots(loop, 1);
    std::vector<int> order;
    run_within(loop, slots.acquire());
    std::vector<Task<void>> waiters;
    for (int id = 1; id <= 3; ++id) waiters.push_back(loop.create_task(acquire_and_log(&slots, &order, id)));
    run_one_turn(loop);
    EXPECT_TRUE(order.empty());
    for (int i = 0; i < 3; ++i) {
        slots.release();  // hands the unit straight to the first waiter: value() stays 0
        EXPECT_EQ(slots.value(), 0u);
        Task<void> newcomer = loop.create_task(acquire_and_log(&slots, &order, 10 + i));
        run_within(loop, waiters[i]);
        newcomer.cancel();  // it would have to wait: it must not have overtaken anyone
        EXPECT_THROW(run_within(loop, newcomer), CancelledError);
    }
    EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
    slots.release();
    EXPECT_EQ(slots.value(), 1u);
}

TEST_F(SemaphoreTest, CancellingAWaitingAcquireTakesNothing) {
    EventLoop loop;
    Semaphore slots(loop, 1);
    run_within(loop, slots.acquire());
    Task<void> waiting = loop.create_task(slots.acquire());
    run_one_turn(loop);
    waiting.cancel();
    EXPECT_THROW(run_within(loop, waiting), CancelledError);
    slots.release();
    EXPECT_EQ(slots.value(), 1u);
}

TEST_F(SemaphoreTest, AWaiterHandedAUnitAndThenCancelledPassesTheUnitOn) {
    EventLoop loop;
    Semaphore slots(loop, 1);
    std::vector<int> order;
    run_within(loop, slots.acquire());
    Task<void> first = loop.create_task(acquire_and_log(&slots, &order, 1));
    Task<void> second = loop.create_task(acquire_and_log(&slots, &order, 2));
    run_one_turn(loop);
    slots.release();  // hands the unit to `first`, whose step is now scheduled
    first.cancel();
    EXPECT_THROW(run_within(loop, first), CancelledError);
    run_within(loop, second);
    EXPECT_EQ(order, (std::vector<int>{2}));
    slots.release();
    EXPECT_EQ(slots.value(), 1u);  // no unit lost, none made up
}

TEST_F(SemaphoreTest, AGuardReleasesItsUnitWhenItGoesEvenWhenTheTaskFails) {
    EventLoop loop;
    Semaphore slots(loop, 1);
    auto fail_holding = [](Semaphore* s) -> Coroutine<void> {
        Semaphore::Guard slot = co_await s->guard();
        throw std::runtime_error("failed while holding the unit");
    };
    EXPECT_THROW(run_within(loop, fail_holding(&slots)), std::runtime_error);
    EXPECT_EQ(slots.value(), 1u);
}

}  // namespace
}  // namespace sixways::coroutines
