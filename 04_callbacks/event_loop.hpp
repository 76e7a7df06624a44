// The reactor of stage 04: an epoll loop that calls a callback when a descriptor is ready or a
// timer is due. The names are asyncio's (add_reader, call_later, call_soon, run), because the idea
// is the same; stage 06 builds a small asyncio on the same kind of loop.
//
//   EventLoop loop;
//   loop.add_writer(fd, [&] { ... });              // call me when fd can be written
//   loop.add_reader(fd, [&] { ... });              // call me when fd can be read (or has hung up)
//   loop.remove_writer(fd);                        // stop calling
//   loop.remove_and_close(fd);                     // instead of close(fd), once it was watched
//   TimerHandle t = loop.call_later(10s, [&] { ... });
//   t.cancel();                                    // it will never run, even if already due
//   loop.call_soon([&] { ... });                   // on the next turn of the loop
//   loop.run();                                    // until nothing is left to wait for
//
// One thread only: nothing here is safe to call from another thread.
#pragma once

#include <sys/epoll.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "common/duration.hpp"

namespace sixways::callbacks {

using Callback = std::function<void()>;

// Three names, asyncio's, for three things:
//   Handle       a registration: one callback the loop has promised to call (a reader, a writer,
//                a call_soon), shared by the loop's tables and its ready queue;
//   Timer        a Handle with a deadline, kept in the loop's timer heap;
//   TimerHandle  the token call_later returns to its caller, to cancel that one Timer.
//
// A callback the loop has promised to call, once or (for a reader or writer) every time its
// descriptor is ready, until it is cancelled. The loop's tables and its ready queue share a Handle,
// so a Handle outlives its removal while an event for it is still queued; `cancelled` is how that
// queued event learns it must not run. (asyncio: events.Handle.)
struct Handle {
    explicit Handle(Callback callback) : callback(std::move(callback)) {}
    Callback callback;
    bool cancelled = false;
};

// A Handle with a deadline, kept in the loop's timer heap. (asyncio: events.TimerHandle.)
struct Timer : Handle {
    Timer(Clock::time_point when, std::uint64_t sequence, Callback callback)
        : Handle(std::move(callback)), when(when), sequence(sequence) {}
    Clock::time_point when;
    std::uint64_t sequence;  // order of call_at calls: breaks ties between equal deadlines
};

// What call_later returns: the way to cancel the timer. Copyable; every copy names the same timer.
// A default-constructed handle names no timer, and cancel() on it does nothing.
class TimerHandle {
public:
    TimerHandle() = default;
    explicit TimerHandle(std::shared_ptr<Timer> timer) : timer_(std::move(timer)) {}

    // After cancel() the callback never runs, even if the timer is already due and queued in this
    // very turn of the loop. Cancelling twice, or after the callback ran, is harmless.
    void cancel() {
        if (timer_) timer_->cancelled = true;
    }
    bool cancelled() const { return timer_ && timer_->cancelled; }

private:
    std::shared_ptr<Timer> timer_;
};

class EventLoop {
public:
    EventLoop();  // throws std::system_error if epoll_create1 fails
    ~EventLoop();
    EventLoop(const EventLoop&) = delete;
    EventLoop& operator=(const EventLoop&) = delete;

    // Calls `callback` on every turn in which fd is readable, or has an error or a hang-up (so
    // the callback's own recv() learns what happened), until remove_reader(fd). A second add_reader
    // for the same fd replaces the first. Level-triggered: a callback that does not read everything
    // is simply called again on the next turn. Tells epoll at once; throws std::system_error if
    // epoll refuses, and then changes nothing.
    void add_reader(int fd, Callback callback) { add_watch(fd, EPOLLIN, std::move(callback)); }
    // The same for writable. Remove a writer as soon as there is nothing left to write: a socket is
    // writable almost all the time, and a writer left behind turns the loop into a busy loop.
    void add_writer(int fd, Callback callback) { add_watch(fd, EPOLLOUT, std::move(callback)); }

    // Returns false if there was nothing to remove. Tells epoll at once. An event for fd that this
    // turn has already collected is dropped.
    bool remove_reader(int fd) { return remove_watch(fd, EPOLLIN); }
    bool remove_writer(int fd) { return remove_watch(fd, EPOLLOUT); }
    // Removes fd's reader and writer, if any, and closes fd. Close a descriptor this loop has
    // watched this way rather than with close(fd): the loop must hear that the number is free
    // before the kernel gives it to the next socket, or it would take that socket for one that
    // epoll already has. It needs no EPOLL_CTL_DEL: close() takes a socket out of epoll by itself
    // (when no other descriptor refers to it).
    void remove_and_close(int fd);

    // Calls `callback` once, on the first turn after time() reaches `when` (never before it).
    // Timers with equal deadlines run in the order they were scheduled.
    TimerHandle call_at(Clock::time_point when, Callback callback);
    TimerHandle call_later(Duration delay, Callback callback);

    // Calls `callback` once, on the next turn of the loop (never inside the current one).
    void call_soon(Callback callback);

    // Turns the loop until there are no readers, writers, timers (that are not cancelled) or ready
    // callbacks left. An exception thrown by a callback leaves run() and drops the rest of its
    // turn; the loop is then done with, not run again (fetch_all lets the exception go, and its
    // loop with it). Calling run() from inside a callback throws std::logic_error (as asyncio
    // raises "This event loop is already running"): the inner run would reuse the outer turn's
    // queue.
    void run();

    // The loop's clock: a monotonic clock, so timers do not jump when the wall clock is set.
    Clock::time_point time() const { return Clock::now(); }

private:
    // The reader and writer of one descriptor. epoll holds one registration per descriptor, whose
    // interest set is the union of the two; `registered` is what epoll has, and the loop keeps it
    // equal to interest() by telling epoll of every change at once.
    struct Watch {
        std::shared_ptr<Handle> reader;
        std::shared_ptr<Handle> writer;
        std::uint32_t registered = 0;  // 0, EPOLLIN, EPOLLOUT or both

        std::uint32_t interest() const { return (reader ? EPOLLIN : 0u) | (writer ? EPOLLOUT : 0u); }
    };

    void run_once();
    // `direction` is EPOLLIN for the reader, EPOLLOUT for the writer.
    void add_watch(int fd, std::uint32_t direction, Callback callback);
    bool remove_watch(int fd, std::uint32_t direction);
    void tell_epoll(int fd, std::uint32_t interest);
    bool has_live_timers();
    int epoll_timeout_ms();

    int epoll_fd_ = -1;
    std::vector<Watch> watches_;  // indexed by descriptor number: O(1) lookup, no hashing
    std::size_t watching_ = 0;    // readers + writers registered

    std::vector<std::shared_ptr<Timer>> timers_;  // a min-heap on (when, sequence)
    std::uint64_t next_sequence_ = 0;

    std::vector<std::shared_ptr<Handle>> ready_;    // to run on the next turn
    std::vector<std::shared_ptr<Handle>> running_;  // the ones this turn runs (see run_once)
    std::array<epoll_event, 1024> events_{};        // one epoll_wait's worth of events
    bool is_running_ = false;
};

}  // namespace sixways::callbacks
