// sleep: a coroutine that finishes after a delay, without blocking the loop (asyncio.sleep).
//
//   co_await sleep(loop, 250ms);
//
// It is the smallest example of the pattern every wait in this stage follows: make a Future,
// arrange for something to complete it later (here a timer), co_await it, and undo the
// arrangement however the wait ends. sleep.cpp is a handful of lines.
#pragma once

#include "06_coroutines/event_loop.hpp"
#include "06_coroutines/task.hpp"

namespace sixways::coroutines {

// Finishes `delay` after its first step. Cancelling it cancels its timer. A delay of zero or less
// still waits for a later turn of the loop.
Task<void> sleep(EventLoop& loop, Duration delay);

}  // namespace sixways::coroutines
