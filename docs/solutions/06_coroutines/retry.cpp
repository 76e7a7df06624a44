#include "retry.hpp"

#include "06_coroutines/fetch.hpp"
#include "06_coroutines/sleep.hpp"

namespace sixways::solutions {

using namespace sixways::coroutines;

// Three co_awaits, read top to bottom. Each awaited coroutine (fetch, sleep) runs inside the task
// that runs this one, like a function call; while one waits, the loop runs every other task. fetch
// turns every error into its Result, so there is nothing to catch; a cancel of the task arrives as
// a CancelledError at whichever co_await is waiting, and goes straight on up.
Coroutine<Result> fetch_with_one_retry(EventLoop& loop, const Request& request, const Options& options,
                                       Duration pause) {
    Result first = co_await fetch(loop, request, options);
    if (first.ok()) co_return first;
    co_await sleep(loop, pause);  // the loop runs other tasks meanwhile; a timer wakes this one
    co_return co_await fetch(loop, request, options);
}

}  // namespace sixways::solutions
