// Chapter 06, part 2, exercise 3: a coroutine of your own on stage 06's loop.
#pragma once

#include "06_coroutines/event_loop.hpp"
#include "06_coroutines/task.hpp"
#include "common/duration.hpp"
#include "common/fetch.hpp"

namespace sixways::solutions {

// Fetches `request`; if that fails (any error: refused, reset, timeout, ...), waits `pause` and
// fetches it once more, and returns the second result, whatever it is. A response of any status
// (a 404 too) is not a failure and is not fetched again. `request` and `options` must outlive the
// coroutine, as for stage 06's fetch.
coroutines::Coroutine<Result> fetch_with_one_retry(coroutines::EventLoop& loop, const Request& request,
                                                   const Options& options, Duration pause);

}  // namespace sixways::solutions
