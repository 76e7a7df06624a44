#include "06_coroutines/waiter_queue.hpp"

namespace sixways::coroutines {

WaiterQueue::Place::Place(WaiterQueue& line)
    : line_(line), wake_up_(line.loop_), position_(line.waiters_.insert(line.waiters_.end(), wake_up_)) {}

WaiterQueue::Place::~Place() {
    const bool woken = wake_up_.done() && !wake_up_.cancelled();
    if (!woken) {
        line_.waiters_.erase(position_);  // still in line: cancelled, or destroyed while waiting
    } else if (!taken_ && line_.pass_on_) {
        line_.pass_on_();  // woken, then cancelled or destroyed before it used its turn: pass it on
    }
}

bool WaiterQueue::wake_next() {
    for (auto it = waiters_.begin(); it != waiters_.end(); ++it) {
        if (it->done()) continue;  // cancelled: its Place takes it out on its task's next step
        Future<void> waiter = std::move(*it);
        waiters_.erase(it);
        waiter.set_result();
        return true;
    }
    return false;
}

void WaiterQueue::wake_all() {
    for (auto it = waiters_.begin(); it != waiters_.end();) {
        if (it->done()) {
            ++it;  // cancelled: as in wake_next
            continue;
        }
        Future<void> waiter = std::move(*it);
        it = waiters_.erase(it);
        waiter.set_result();
    }
}

}  // namespace sixways::coroutines
