// wait_for: a coroutine with a deadline (asyncio.wait_for, built as asyncio.timeout is).
//
//   try {
//       Response response = co_await wait_for(loop, download(url), 10s);
//   } catch (const TimeoutError&) {
//       // download() was cancelled and has finished: its socket is closed, its timers are gone
//   }
//
// The coroutine runs inside the awaiting task, like any co_await. At the deadline, wait_for cancels
// that task, so the coroutine gets a CancelledError at the co_await it is suspended in, and unwinds
// (its destructors close what it opened). When the CancelledError comes out, wait_for turns it
// into TimeoutError, but only if the cancel was its own: the task counts its cancel requests, and
// if another one came too (Ctrl-C in the very turn the deadline fired, say), the CancelledError
// goes on up, and the task stops as it was asked to.
#pragma once

#include <stdexcept>
#include <utility>

#include "06_coroutines/event_loop.hpp"
#include "06_coroutines/task.hpp"
#include "common/explain.hpp"

namespace sixways::coroutines {

class TimeoutError : public std::runtime_error {
public:
    TimeoutError() : std::runtime_error("timed out") {}
};

namespace detail {

// The deadline of one wait_for (asyncio: timeouts.Timeout): cancels the current task when it
// fires, and takes that request back when the wait is over, however it ended. It cannot be copied
// or moved: its timer's callback holds `this`, and ~Deadline cancels the timer before it goes.
class Deadline {
public:
    // current_task() is never null here: a coroutine's body runs only inside its task's step.
    Deadline(EventLoop& loop, Duration timeout) : task_(*loop.current_task()), cancelling_(task_.cancelling()) {
        auto expire = [this] {
            explain::runs("wait_for's deadline timer", -1);
            expired_ = true;
            task_.cancel();
        };
        timer_ = loop.call_later(timeout, expire);
    }
    ~Deadline() { end(); }
    Deadline(const Deadline&) = delete;
    Deadline& operator=(const Deadline&) = delete;

    // Ends the wait (a second call does nothing). True if the deadline caused the cancel, and
    // nobody else asked for one meanwhile: the task's requests are back to what they were.
    bool end() {
        timer_.cancel();
        if (!std::exchange(expired_, false)) return false;  // the timer never fired: not ours
        return task_.uncancel() <= cancelling_;              // ours, unless another one came too
    }

private:
    TaskBase& task_;
    int cancelling_;  // the task's requests before this wait began
    TimerHandle timer_;
    bool expired_ = false;
};

}  // namespace detail

// The result of `work`, or TimeoutError if it has not finished `timeout` after it started. If
// `work` catches the CancelledError and returns anyway, its result is returned.
template <class T>
Coroutine<T> wait_for(EventLoop& loop, Coroutine<T> work, Duration timeout) {
    detail::Deadline deadline(loop, timeout);
    try {
        co_return co_await std::move(work);
    } catch (const CancelledError&) {
        if (deadline.end()) throw TimeoutError();
        throw;
    }
}

}  // namespace sixways::coroutines
