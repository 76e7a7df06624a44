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

// What the tasks' done callbacks share with the waiting coroutine. Shared, not in its frame: a
// callback may run after the frame is gone. The callbacks hold no task, so they keep none alive.
struct GatherState {
    explicit GatherState(EventLoop& loop) : wake_up(loop) {}
    Future<void> wake_up;               // set when a task has finished since the coroutine last looked
    std::vector<std::size_t> finished;  // which tasks, by their place in the list
};

// A finished task's failure: its exception, or CancelledError if it was cancelled. Null if it
// returned.
template <class T>
std::exception_ptr failure_of(const Task<T>& task) {
    if (task.cancelled()) return std::make_exception_ptr(CancelledError());
    return task.exception();
}

// Waits until every task is done; with `fail_fast`, cancels the others at the first failure (of the
// first task seen to fail). Returns that failure (with fail_fast) or null. A cancel of the waiting
// task cancels every task, waits for them all, and is thrown on.
template <class T>
Coroutine<std::exception_ptr> wait_all(EventLoop& loop, std::vector<Task<T>>& tasks, bool fail_fast) {
    auto state = std::make_shared<GatherState>(loop);
    for (std::size_t i = 0; i < tasks.size(); ++i) {
        auto on_done = [state, i] {
            state->finished.push_back(i);
            if (!state->wake_up.done()) state->wake_up.set_result();
        };
        tasks[i].add_done_callback(std::move(on_done));
    }
    std::exception_ptr failure;
    std::size_t done = 0;
    bool cancelled = false;  // C++ forbids co_await inside a catch handler: hence the flag
    bool cancelling = false;
    while (done < tasks.size()) {
        try {
            co_await state->wake_up;
        } catch (const CancelledError&) {
            cancelled = true;
        }
        state->wake_up = Future<void>(loop);
        // Only the tasks that finished since the last look: looking at them all each time would
        // cost N tasks times the number of wake-ups.
        for (const std::size_t i : std::exchange(state->finished, {})) {
            ++done;
            if (fail_fast && !failure) failure = failure_of(tasks[i]);
        }
        if ((cancelled || failure) && !cancelling) {
            cancelling = true;  // once: the others are cancelled, and waited for
            for (Task<T>& task : tasks) task.cancel();
        }
    }
    if (cancelled) throw CancelledError();
    co_return failure;
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
