// gather and wait: wait for several tasks at once.
//
//   std::vector<Task<int>> tasks;
//   tasks.push_back(loop.create_task(work(1)));
//   tasks.push_back(loop.create_task(work(2)));
//   std::vector<int> results = co_await gather(loop, std::move(tasks));  // in the order given
//
//   co_await wait(loop, tasks);  // until every task is done, whatever its outcome
//
// When a task fails. asyncio's gather passes the first exception on at once and leaves the other
// tasks running, owned by nobody in particular (Python's garbage collector tidies up after them).
// In C++ somebody must own a running task, and here that is the gather. So it cancels the other
// tasks, waits until every one has finished (sockets closed, timers gone), and then throws the
// first failure. That is asyncio's TaskGroup rule, and it gives a simple guarantee: when a gather
// is done, so are its tasks. Cancelling the gather (or wait) cancels every task that is not done,
// waits for them all, and then throws CancelledError.
#pragma once

#include <cstddef>
#include <exception>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "06_coroutines/event_loop.hpp"
#include "06_coroutines/task.hpp"

namespace sixways::coroutines {

namespace detail {

// What the done callbacks on the tasks share with the waiting coroutine. Shared, not in the frame:
// a callback may run after the frame is gone.
struct GatherState {
    explicit GatherState(EventLoop& loop, std::size_t count) : wake_up(loop), remaining(count) {}
    Future<void> wake_up;  // set when there is something to look at
    std::size_t remaining;
    std::exception_ptr first_failure;  // in the order the tasks finished
    bool fail_fast = false;
};

// A done callback holds a handle to its task. If the waiting frame is destroyed before the tasks
// are done, their callbacks are taken back: each task would otherwise keep itself alive for ever
// through a callback stored in its own future.
template <class T>
class DoneCallbacks {
public:
    explicit DoneCallbacks(std::vector<Task<T>>& tasks) : tasks_(tasks) {}
    ~DoneCallbacks() {
        for (std::size_t i = 0; i < ids_.size(); ++i) tasks_[i].remove_done_callback(ids_[i]);
    }
    DoneCallbacks(const DoneCallbacks&) = delete;
    DoneCallbacks& operator=(const DoneCallbacks&) = delete;
    void add(Task<T>& task, Callback callback) { ids_.push_back(task.add_done_callback(std::move(callback))); }

private:
    std::vector<Task<T>>& tasks_;
    std::vector<CallbackId> ids_;
};

// Waits until every task is done; with `fail_fast`, cancels the others at the first failure first.
// Returns the first failure (with fail_fast) or nothing. A cancel of the waiting task cancels every
// task, waits for them, and is thrown on.
template <class T>
Coroutine<std::exception_ptr> wait_all(EventLoop& loop, std::vector<Task<T>>& tasks, bool fail_fast) {
    auto watch = std::make_shared<GatherState>(loop, tasks.size());
    watch->fail_fast = fail_fast;
    DoneCallbacks<T> callbacks(tasks);
    for (Task<T>& task : tasks) {
        auto on_done = [watch, task] {
            --watch->remaining;
            const bool failed = task.cancelled() || task.exception() != nullptr;
            if (failed && !watch->first_failure) {
                watch->first_failure = task.cancelled() ? std::make_exception_ptr(CancelledError()) : task.exception();
            }
            if ((watch->remaining == 0 || (failed && watch->fail_fast)) && !watch->wake_up.done()) {
                watch->wake_up.set_result();
            }
        };
        callbacks.add(task, std::move(on_done));
    }
    bool cancelled = false;
    // C++ forbids co_await inside a catch handler: hence the flag, and the waits outside them.
    try {
        if (watch->remaining > 0) co_await watch->wake_up;
    } catch (const CancelledError&) {
        cancelled = true;
    }
    if (watch->remaining > 0) {
        // A task failed (fail_fast) or we were cancelled: cancel the rest, and wait for every one.
        for (Task<T>& task : tasks) task.cancel();
        watch->fail_fast = false;
        while (watch->remaining > 0) {
            watch->wake_up = Future<void>(loop);
            try {
                co_await watch->wake_up;
            } catch (const CancelledError&) {
                cancelled = true;  // again: nothing more to do than to wait
            }
        }
    }
    if (cancelled) throw CancelledError();
    co_return fail_fast ? watch->first_failure : nullptr;
}

}  // namespace detail

// The results of all tasks, in order; or the first failure, thrown after the others were cancelled
// and have finished.
template <class T>
    requires(!std::is_void_v<T>)
Coroutine<std::vector<T>> gather(EventLoop& loop, std::vector<Task<T>> tasks) {
    if (std::exception_ptr failure = co_await detail::wait_all(loop, tasks, true)) std::rethrow_exception(failure);
    std::vector<T> results;
    results.reserve(tasks.size());
    for (Task<T>& task : tasks) results.push_back(co_await std::move(task));  // done: no suspension
    co_return results;
}

inline Coroutine<void> gather(EventLoop& loop, std::vector<Task<void>> tasks) {
    if (std::exception_ptr failure = co_await detail::wait_all(loop, tasks, true)) std::rethrow_exception(failure);
}

// Until every task is done, whatever its outcome: each task keeps its own result or exception
// (asyncio.wait).
template <class T>
Coroutine<void> wait(EventLoop& loop, std::vector<Task<T>>& tasks) {
    co_await detail::wait_all(loop, tasks, false);
}

}  // namespace sixways::coroutines
