// Queue: a first-in first-out queue between tasks (asyncio.Queue), with join() and task_done() for
// a pool of workers, as in the 500 Lines crawler:
//
//   Queue<std::string> urls(loop);                  // unbounded; Queue<T> q(loop, 100) holds 100
//   urls.put_nowait(root);                          // never waits; throws QueueFull when full
//   // each worker:
//   for (;;) {
//       std::string url = co_await urls.get();      // waits while the queue is empty
//       ... co_await urls.put(link) for each new link ...
//       urls.task_done();                           // this item is dealt with
//   }
//   // the crawl itself:
//   co_await urls.join();                           // until every item put has been task_done()
//   for (Task<void>& worker : workers) worker.cancel();
//
// A Queue must outlive the tasks that use it; it is not safe to use from another thread.
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

class QueueFull : public std::runtime_error {
public:
    QueueFull() : std::runtime_error("put_nowait: the queue is full") {}
};

template <class T>
class Queue {
public:
    // maxsize 0: no limit.
    explicit Queue(EventLoop& loop, std::size_t maxsize = 0)
        : maxsize_(maxsize),
          getters_(loop, [this] { if (!empty()) getters_.wake_next(); }),
          putters_(loop, [this] { if (!full()) putters_.wake_next(); }),
          joiners_(loop, nullptr) {}
    Queue(const Queue&) = delete;
    Queue& operator=(const Queue&) = delete;

    std::size_t size() const { return items_.size(); }
    std::size_t maxsize() const { return maxsize_; }
    bool empty() const { return items_.empty(); }
    bool full() const { return maxsize_ > 0 && items_.size() >= maxsize_; }

    // Takes the first item, waiting while the queue is empty. Waiting getters are served first come,
    // first served. Cancelling a waiting get() takes nothing; a get() that was woken for an item
    // and cancelled before it could take it wakes the next getter instead (WaiterQueue).
    Task<T> get() {
        while (empty()) {
            WaiterQueue::Place place(getters_);
            co_await place.wake_up();
            place.take();
        }
        co_return get_nowait();
    }

    // Adds an item at the end, waiting while the queue is full.
    Task<void> put(T item) {
        while (full()) {
            WaiterQueue::Place place(putters_);
            co_await place.wake_up();
            place.take();
        }
        put_nowait(std::move(item));
    }

    // Throws QueueEmpty if there is no item.
    T get_nowait() {
        if (empty()) throw QueueEmpty();
        T item = std::move(items_.front());
        items_.pop_front();
        putters_.wake_next();  // room for one more
        return item;
    }

    // Throws QueueFull if the queue is at its maxsize.
    void put_nowait(T item) {
        if (full()) throw QueueFull();
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
    Task<void> join() {
        if (unfinished_ == 0) co_return;
        WaiterQueue::Place place(joiners_);
        co_await place.wake_up();
        place.take();
    }

private:
    std::size_t maxsize_;
    std::deque<T> items_;
    std::size_t unfinished_ = 0;  // put, and not yet task_done()
    WaiterQueue getters_;
    WaiterQueue putters_;
    WaiterQueue joiners_;
};

}  // namespace sixways::coroutines
