// Chapter 06, part 2, exercise 6: the first of two answers.
#pragma once

#include "06_coroutines/event_loop.hpp"
#include "06_coroutines/task.hpp"
#include "common/fetch.hpp"

namespace sixways::solutions {

// Fetches `first` and `second` side by side, each in a task of its own, and returns the first
// result that is a response (ok()). The other fetch is then cancelled and waited for: when this
// coroutine returns, neither fetch is still running, and nothing of theirs is left in the loop. If
// both fail, returns the failure that came last. Cancelling this coroutine's task cancels both
// fetches, waits for them, and throws CancelledError. `first`, `second` and `options` must outlive
// the coroutine.
coroutines::Coroutine<Result> first_answer(coroutines::EventLoop& loop, const Request& first, const Request& second,
                                           const Options& options);

}  // namespace sixways::solutions
