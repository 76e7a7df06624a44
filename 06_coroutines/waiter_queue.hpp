// A line of tasks waiting for their turn: what Queue and Semaphore are built on (asyncio keeps a
// deque of futures in each: Queue._getters, Queue._putters, Semaphore._waiters).
//
// Each waiting task holds a Place in the line, a local of its coroutine:
//
//   while (nothing_for_me()) {
//       WaiterQueue::Place place(line);   // joins the line
//       co_await place.wake_up();         // until wake_next() picks us (or we are cancelled)
//       place.take();                     // we are running with our turn
//   }                                     // ~Place leaves the line
//
// and the other side calls line.wake_next() when there is something for the first waiter.
//
// The hard case is a waiter that is woken and then cancelled before it ran: wake_next() chose it,
// so nobody else was woken, but it will never use its turn. If nothing is done, the turn is lost:
// an item sits in a Queue while another task waits for it for ever. asyncio's Queue.get and
// Semaphore.acquire handle this in an `except` clause around the wait; here the Place's
// destructor does it, which also covers a waiter whose whole frame is destroyed: a woken Place
// that never took its turn calls the line's `pass_on`, and the owner hands the turn on.
#pragma once

#include <list>

#include "06_coroutines/event_loop.hpp"
#include "06_coroutines/future.hpp"

namespace sixways::coroutines {

class WaiterQueue {
public:
    // `pass_on` is called when a woken waiter gives up its turn unused (may be empty: nothing to
    // pass on, as for Queue::join, which wakes everybody).
    WaiterQueue(EventLoop& loop, Callback pass_on) : loop_(loop), pass_on_(std::move(pass_on)) {}
    WaiterQueue(const WaiterQueue&) = delete;
    WaiterQueue& operator=(const WaiterQueue&) = delete;

    // One task's place in the line: joins at construction, leaves at destruction.
    class Place {
    public:
        explicit Place(WaiterQueue& line);
        ~Place();
        Place(const Place&) = delete;
        Place& operator=(const Place&) = delete;

        // Completes when wake_next (or wake_all) picks this place. co_await it.
        Future<void>& wake_up() { return wake_up_; }
        // Call once the co_await has returned: the turn is used, nothing to pass on.
        void take() { taken_ = true; }

    private:
        WaiterQueue& line_;
        Future<void> wake_up_;
        std::list<Future<void>>::iterator position_;
        bool taken_ = false;
    };

    // Wakes the first waiter that is still waiting, and takes it out of the line. Returns false if
    // nobody is waiting.
    bool wake_next();
    // Wakes every waiter.
    void wake_all();

private:
    EventLoop& loop_;
    Callback pass_on_;
    // Pending wake-ups in arrival order. An entry leaves the line when wake_next completes it
    // (the waker erases it), or when its Place is destroyed without being woken (the Place erases
    // it). A cancelled entry stays until its task runs and destroys its Place, which is the very
    // next turn; wake_next steps over it meanwhile.
    std::list<Future<void>> waiters_;
};

}  // namespace sixways::coroutines
