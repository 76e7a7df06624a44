// wait_for: a task with a deadline (asyncio.wait_for).
//
//   try {
//       Response response = co_await wait_for(loop, download(url), 10s);
//   } catch (const TimeoutError&) {
//       // download() was cancelled, and it has FINISHED: its socket is closed, its timers are gone
//   }
//
// At the deadline, wait_for cancels the task and then keeps waiting until the task has really
// finished: the task may need turns of the loop to unwind (its CancelledError runs destructors,
// and it may even catch it to clean up). Only then does wait_for throw TimeoutError. Returning
// earlier would leave the task running with nobody watching it, and leave the caller believing it
// was over. (asyncio's wait_for waits for the cancelled task too.)
#pragma once

#include <stdexcept>

#include "06_coroutines/event_loop.hpp"
#include "06_coroutines/task.hpp"

namespace sixways::coroutines {

class TimeoutError : public std::runtime_error {
public:
    TimeoutError() : std::runtime_error("timed out") {}
};

// The result of `task`, or TimeoutError if it has not finished `timeout` after wait_for's first
// step. A task that was not started yet starts inside that step, at the co_await below, like a
// function call: `co_await wait_for(loop, fetch(url), 10s)` starts the fetch and its deadline
// together. Cancelling wait_for cancels the task (and still waits for it). If the task finishes
// anyway after being cancelled at the deadline (it caught the CancelledError and returned a
// result), its result is returned: it is not thrown away.
//
// The result is copied out of the task, not moved: wait_for keeps its own handle to the task for
// the whole wait (the deadline needs it to cancel the task). A large result is better written into
// the caller's frame by a Task<void>, as fetch.cpp's exchange() does.
template <class T>
Task<T> wait_for(EventLoop& loop, Task<T> task, Duration timeout) {
    bool timed_out = false;
    // Named, as every capturing lambda in this stage's coroutines is: g++ 12 may destroy one twice
    // when it is a temporary in an expression that also has a co_await (GCC PR 107288). This
    // expression has none, but a later edit could add one. The lambda refers to this frame; the
    // guard cancels the timer, and so drops the lambda, before the frame's locals are gone.
    auto on_deadline = [&task, &timed_out] {
        timed_out = true;
        task.cancel();  // our co_await below wakes when the task has finished cancelling
    };
    TimerGuard deadline(loop.call_later(timeout, on_deadline));
    try {
        co_return co_await task;
    } catch (const CancelledError&) {
        if (timed_out) throw TimeoutError();
        throw;  // cancelled by someone else (this wait_for itself, most likely)
    }
}

}  // namespace sixways::coroutines
