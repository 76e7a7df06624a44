#include "06_coroutines/sleep.hpp"

namespace sixways::coroutines {

Task<void> sleep(EventLoop& loop, Duration delay) {
    Future<void> woken(loop);
    // The timer's callback refers to `woken` in this frame: the guard below cancels the timer
    // (dropping the callback) before `woken` is destroyed, so it never outlives it. `woken` may
    // be done already (cancelled) when a due timer runs in the same turn: hence the check.
    auto wake = [&woken] {
        if (!woken.done()) woken.set_result();
    };
    // asyncio: `h = loop.call_later(...); try: await future; finally: h.cancel()`. The guard is
    // the finally: it runs whether the wait ends normally, with CancelledError (cancel() on this
    // task cancels `woken`, the future it waits on), or by the frame being destroyed.
    TimerGuard timer(loop.call_later(delay, wake));
    co_await woken;
}

}  // namespace sixways::coroutines
