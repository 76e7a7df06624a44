// sleep: a coroutine that finishes after a delay, without blocking the loop (asyncio.sleep).
//
//   co_await sleep(loop, 250ms);
//
// The smallest example of the pattern every wait in this stage follows: make a Future, arrange for
// something to complete it later (here a timer), co_await it, and undo the arrangement however the
// wait ends (here the TimerGuard: finished, cancelled, or the frame destroyed).
#pragma once

#include "06_coroutines/event_loop.hpp"
#include "06_coroutines/task.hpp"

namespace sixways::coroutines {

// Finishes `delay` after it starts; zero or less still waits for a later turn. Duration::max()
// waits until cancelled. Cancelling it cancels its timer.
inline Coroutine<void> sleep(EventLoop& loop, Duration delay) {
    Future<void> woken(loop);
    // The callback refers to `woken` in this frame; the guard cancels the timer, and so drops the
    // callback, before `woken` is destroyed. `woken` may be cancelled already when the timer runs.
    auto wake = [&woken] {
        if (!woken.done()) woken.set_result();
    };
    TimerGuard timer(loop.call_later(delay, wake));
    co_await woken;
}

}  // namespace sixways::coroutines
