// Queue: a first-in first-out queue between tasks (asyncio.Queue), with join() and task_done() for
// a pool of workers, as in the 500 Lines crawler:
//
//   Queue<std::string> urls(loop);
//   urls.put_nowait(root);                          // never waits: the queue has no limit
//   // each worker:
//   for (;;) {
//       std::string url = co_await urls.get();      // waits while the queue is empty
//       ... urls.put_nowait(link) for each new link ...
//       urls.task_done();                           // this item is dealt with
//   }
//   // the crawl itself:
//   co_await urls.join();                           // until every item put has been task_done()
//
// A Queue must outlive the tasks that use it. (asyncio's Queue can also be bounded, with a put()
// that waits while it is full; no program here needs that.)
#pragma once

#include <cstddef>
#include <deque>
#include <stdexcept>
#include <utility>

#include "06_coroutines/event_loop.hpp"
#include "06_coroutines/task.hpp"
#include "06_coroutines/waiter_queue.hpp"

namespace sixways::coroutines {

class QueueEmpty : public std::runtime_error {
public:
    QueueEmpty() : std::runtime_error("get_nowait: the queue is empty") {}
};

template <class T>
class Queue {
public:
    explicit Queue(EventLoop& loop)
        : getters_(loop, [this] {
              if (!empty()) getters_.wake_next();
          }),
          joiners_(loop, nullptr) {}
    Queue(const Queue&) = delete;
    Queue& operator=(const Queue&) = delete;

    std::size_t size() const { return items_.size(); }
    bool empty() const { return items_.empty(); }

    // Takes the first item, waiting while the queue is empty; waiting getters are served first
    // come, first served. A get() that is cancelled while it waits takes nothing; one that was
    // woken for an item and cancelled before it could take it wakes the next getter instead.
    Coroutine<T> get() {
        while (empty()) {
            WaiterQueue::Place place(getters_);
            co_await place.wake_up();
            place.take();
        }
        co_return get_nowait();
    }

    // Throws QueueEmpty if there is no item.
    T get_nowait() {
        if (empty()) throw QueueEmpty();
        T item = std::move(items_.front());
        items_.pop_front();
        return item;
    }

    void put_nowait(T item) {
        items_.push_back(std::move(item));
        ++unfinished_;
        getters_.wake_next();  // one item: one getter
    }

    // A consumer has finished with an item it got. Throws std::logic_error if called more often
    // than items were put (asyncio raises ValueError).
    void task_done() {
        if (unfinished_ == 0) throw std::logic_error("task_done() called more times than items were put");
        if (--unfinished_ == 0) joiners_.wake_all();
    }

    // Waits until every item ever put has been marked task_done().
    Coroutine<void> join() {
        if (unfinished_ == 0) co_return;
        WaiterQueue::Place place(joiners_);
        co_await place.wake_up();
        place.take();
    }

private:
    std::deque<T> items_;
    std::size_t unfinished_ = 0;  // put, and not yet task_done()
    WaiterQueue getters_;
    WaiterQueue joiners_;
};

}  // namespace sixways::coroutines
