// Optional: neither the fetch nor the crawler uses it; it is here because asyncio code uses it
// everywhere, and it shows WaiterQueue's hand-over once more.
//
// Semaphore: at most N tasks at a time past this point (asyncio.Semaphore). For tasks that exist
// anyway; fetch_all's --concurrency uses workers instead, so that waiting requests cost no task.
//
//   Semaphore slots(loop, 4);
//   {
//       Semaphore::Guard slot = co_await slots.guard();  // waits while 4 others hold a slot
//       ... at most 4 tasks are here at once ...
//   }                                                    // ~Guard releases the slot
//
//   co_await slots.acquire(); ...; slots.release();      // the same without the guard
//
// A Semaphore must outlive the tasks that use it; it is not safe to use from another thread.
#pragma once

#include <cstddef>

#include "06_coroutines/event_loop.hpp"
#include "06_coroutines/task.hpp"
#include "06_coroutines/waiter_queue.hpp"

namespace sixways::coroutines {

class Semaphore {
public:
    Semaphore(EventLoop& loop, std::size_t value);
    Semaphore(const Semaphore&) = delete;
    Semaphore& operator=(const Semaphore&) = delete;

    // Holds one unit and releases it when destroyed. Movable: the unit goes with it.
    class Guard {
    public:
        Guard(Guard&& other) noexcept : semaphore_(std::exchange(other.semaphore_, nullptr)) {}
        Guard& operator=(Guard&&) = delete;
        ~Guard() {
            if (semaphore_ != nullptr) semaphore_->release();
        }

    private:
        friend class Semaphore;
        explicit Guard(Semaphore& semaphore) : semaphore_(&semaphore) {}
        Semaphore* semaphore_;
    };

    // Takes a unit, waiting while there is none, in a Guard that will release it. Waiters are served
    // first come, first served. Cancelling a waiting guard() takes nothing; one that was handed a
    // unit and cancelled before it ran hands the unit on (WaiterQueue).
    Coroutine<Guard> guard();
    // The same without the Guard: call release() yourself. Prefer guard(): a release() that an
    // exception or a destroyed task skips is a unit lost for good.
    Coroutine<void> acquire();
    // Gives a unit back: to the first waiter if there is one (value() stays 0), else to the count.
    void release();

    // Units free now. Invariant: while it is above zero, nobody is waiting, since release() hands
    // a unit straight to a waiter if there is one; so a newcomer never overtakes a waiter.
    std::size_t value() const { return value_; }
    bool locked() const { return value_ == 0; }

private:
    std::size_t value_;
    WaiterQueue waiters_;
};

}  // namespace sixways::coroutines
