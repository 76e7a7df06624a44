#include "06_coroutines/optional/semaphore.hpp"

namespace sixways::coroutines {

// A woken waiter that never used its unit (cancelled or destroyed before it ran) gives it back,
// which hands it to the next waiter.
Semaphore::Semaphore(EventLoop& loop, std::size_t value) : value_(value), waiters_(loop, [this] { release(); }) {}

// From the moment this task owns a unit to the moment it returns there is no suspension, and
// from then on the unit is inside a Guard, in the task's result: if nobody ever reads it (the
// awaiting task is destroyed), the Guard is destroyed with the result and the unit comes back.
Coroutine<Semaphore::Guard> Semaphore::guard() {
    if (value_ > 0) {
        --value_;
        co_return Guard(*this);
    }
    WaiterQueue::Place place(waiters_);
    co_await place.wake_up();
    place.take();  // release() handed its unit to us
    co_return Guard(*this);
}

Coroutine<void> Semaphore::acquire() {
    Guard slot = co_await guard();
    slot.semaphore_ = nullptr;  // keep the unit: the caller will release() it
}

void Semaphore::release() {
    if (!waiters_.wake_next()) ++value_;
}

}  // namespace sixways::coroutines
