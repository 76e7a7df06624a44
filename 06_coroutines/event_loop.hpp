// Stage 06's event loop: stage 04's loop, with tasks on top (asyncio's BaseEventLoop in miniature).
//
// A turn is stage 04's: collect (the readers and writers of the descriptors epoll reports, then the
// timers that are due) into the ready queue, then run what is in the queue. Everything the loop will
// call is a Handle, as in stage 04, and a removed reader or a cancelled timer is a Handle flagged
// cancelled, which the run skips: that is the whole answer to stale events. What this loop adds:
//   - a task's step is a Handle too, queued when the task is woken (task.hpp);
//   - run_until_complete, run_forever and stop, as asyncio has them;
//   - a callback that throws is reported, and the turn goes on;
//   - a removal that names its Handle (remove(fd, handle)), for the socket waits.
// Everything else in this stage (Future, Task, sleep, wait_for, gather, Queue, the socket calls,
// the fetch itself) is built on the few calls below.
//
//   EventLoop loop;
//   loop.call_soon([] { ... });                       // when the queue next runs, never inside this call
//   TimerHandle t = loop.call_later(2s, [] { ... });  // once, 2 s from now
//   t.cancel();                                       // it will never run
//   loop.add_reader(fd, [] { ... });                  // every turn in which fd is readable
//   loop.remove_reader(fd);                           // when the wait is over; then close(fd)
//   Task<int> task = loop.create_task(work());        // starts on the next turn
//   int answer = loop.run_until_complete(task);       // turns the loop until the task is done
//
// One thread only: nothing here may be called from another thread.
#pragma once

#include <sys/epoll.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/duration.hpp"

namespace sixways::coroutines {

using Callback = std::function<void()>;

class EventLoop;
class TaskBase;
template <class T>
class Future;
template <class T>
class Task;
template <class T>
class Coroutine;

namespace detail {
class FutureBase;
}  // namespace detail

// A callback the loop has promised to call: once (call_soon, a timer) or, for a reader, a writer or
// a task's step, each time it is due, until it is removed. The loop's tables and its ready queue
// share it, so it outlives its removal while an entry for it is still queued; `cancelled` is how
// that entry learns it must not run. (asyncio: events.Handle; stage 04's, with two flags more.)
struct Handle {
    Handle(Callback callback, bool once, bool socket_wait = false)
        : callback(std::move(callback)), once(once), socket_wait(socket_wait) {}
    Callback callback;
    bool once;  // a call_soon or a timer: runs once, and lets go of what it captured as it runs
    bool socket_wait;  // add_socket_wait's reader or writer: runs during the collect (run_once)
    bool cancelled = false;
};

// A Handle with a deadline, kept in the loop's timer heap. (asyncio: events.TimerHandle.)
struct Timer : Handle {
    Timer(Clock::time_point when, std::uint64_t sequence, Callback callback)
        : Handle(std::move(callback), true), when(when), sequence(sequence) {}
    Clock::time_point when;
    std::uint64_t sequence;  // order of call_at calls: breaks ties between equal deadlines
};

// What call_later returns: the way to cancel the timer. Copies name the same timer.
class TimerHandle {
public:
    TimerHandle() = default;
    explicit TimerHandle(std::shared_ptr<Timer> timer) : timer_(std::move(timer)) {}
    // After cancel() the callback never runs, even if it is due in the turn that is running, and
    // what it captured is released now. Safe whoever owns this handle, even the callback itself.
    // Cancelling twice, after the callback ran, or after the loop is gone does nothing.
    void cancel();
    bool cancelled() const { return timer_ && timer_->cancelled; }

private:
    std::shared_ptr<Timer> timer_;
};

// Cancels a timer when it goes out of scope, however the scope is left: Python's
// `try: ... finally: timer.cancel()`. In a coroutine, that includes its frame being destroyed.
class TimerGuard {
public:
    explicit TimerGuard(TimerHandle timer) : timer_(std::move(timer)) {}
    ~TimerGuard() { timer_.cancel(); }
    TimerGuard(const TimerGuard&) = delete;
    TimerGuard& operator=(const TimerGuard&) = delete;

private:
    TimerHandle timer_;
};

class EventLoop {
public:
    EventLoop();  // throws std::system_error if epoll_create1 fails
    // Destroys every task still pending (each says "Task was destroyed but it is pending!"), which
    // runs the destructors in their frames: sockets close, readers and timers go. Then the
    // callbacks: from then on call_soon, call_at, call_later and add_* drop their callback and do nothing,
    // and remove_* return false, so that a callback's destructor may call them.
    ~EventLoop();
    EventLoop(const EventLoop&) = delete;
    EventLoop& operator=(const EventLoop&) = delete;

    // Monotonic: timers do not jump when the wall clock is set.
    Clock::time_point time() const { return Clock::now(); }

    // ---- Callbacks. Each runs in run_once, on the loop's own stack. One that throws is reported
    // on stderr (as asyncio's default exception handler does) and the turn goes on. ----

    // Once, the next time the loop runs its ready queue (never inside this call): the next turn,
    // or this one if called while the turn is still collecting events (run_once).
    void call_soon(Callback callback);
    // Once, on the first turn after time() reaches `when`; equal deadlines in scheduling order.
    TimerHandle call_at(Clock::time_point when, Callback callback);
    // A delay too long for the clock (Duration::max()) means "never", not an overflow.
    TimerHandle call_later(Duration delay, Callback callback);

    // ---- Descriptors. Level-triggered: a reader is called on every turn in which fd is readable
    // (or has an error or hang-up to report: its own recv() says which), until it is removed. ----

    // A second add_reader for the same fd replaces the first. Throws std::invalid_argument for a
    // negative fd, std::system_error if epoll refuses the descriptor (and then changes nothing).
    std::shared_ptr<Handle> add_reader(int fd, Callback callback);
    // The same for writable. A socket is writable nearly always: remove the writer as soon as there
    // is nothing left to write, or the loop never sleeps.
    std::shared_ptr<Handle> add_writer(int fd, Callback callback);
    // A socket wait (wait_readable, wait_writable: socket.cpp): a reader (or writer) whose callback
    // does nothing but remove itself and complete a future, so the loop runs it as soon as it sees
    // the event, during the collect (run_once).
    std::shared_ptr<Handle> add_socket_wait(int fd, bool writable, Callback callback);
    // Return false if there was nothing to remove. The callback is never called again, even for an
    // event this turn has already collected. Never throw, so destructors may call them. Remove a
    // descriptor's reader and writer BEFORE you close it (Socket does).
    bool remove_reader(int fd);
    bool remove_writer(int fd);
    // Removes fd's reader or writer only if it is still `handle`: a wait that ends late cannot
    // remove the wait of a newer socket that was given the same descriptor number meanwhile.
    bool remove(int fd, const std::shared_ptr<Handle>& handle);

    // ---- Tasks (task.hpp) ----

    // Wraps the coroutine in a Task and schedules its first step for the next turn. Keep the
    // returned handle: a task whose last handle is dropped is destroyed (asyncio's documentation
    // gives the same warning). An empty name gives "Task-N".
    template <class T>
    [[nodiscard]] Task<T> create_task(Coroutine<T> coroutine, std::string name = {});
    // The task whose step is running now, or null between steps (asyncio.current_task()).
    TaskBase* current_task() const { return current_task_; }

    // ---- Running ----

    // Turns the loop until `future` is done; returns its result or rethrows its exception. Throws
    // std::logic_error if the loop runs out of work first: nothing could ever complete the future
    // (tasks that wait on each other, say), and waiting for ever would hang without telling you.
    template <class T>
    T run_until_complete(Future<T> future);         // future.hpp
    template <class T>
    T run_until_complete(Coroutine<T> coroutine);   // task.hpp: makes it a task first
    // Turns the loop until stop(). Throws std::logic_error when nothing is left to wait for.
    void run_forever() { run(nullptr); }
    // The run returns after the turn that is running (or the next one: a stop() before
    // run_forever is remembered, and that run makes one turn).
    void stop() { stopping_ = true; }

    // What the loop would wait for, for tests and for debugging a program that hangs.
    std::size_t pending_timers() const;
    std::size_t watched_descriptors() const { return descriptors_watched_; }

private:
    friend class TaskBase;  // queues its step, and keeps the list of tasks not done

    // The reader and writer of one descriptor. epoll holds one registration per descriptor, whose
    // interest set is the union of the two; `registered` is what epoll has.
    struct Watch {
        std::shared_ptr<Handle> reader;
        std::shared_ptr<Handle> writer;
        std::uint32_t registered = 0;  // 0, EPOLLIN, EPOLLOUT or both
        std::uint32_t interest() const { return (reader ? EPOLLIN : 0u) | (writer ? EPOLLOUT : 0u); }
    };

    void run(const detail::FutureBase* until);  // until it is done, or stop()
    void run_once();
    void run_handle(Handle& handle);
    int epoll_timeout_ms();
    bool has_live_timers();
    void collect(std::shared_ptr<Handle> handle);
    std::shared_ptr<Handle> add_watch(int fd, std::uint32_t direction, Callback callback, bool socket_wait);
    bool remove_watch(int fd, std::uint32_t direction, const Handle* only);
    void tell_epoll(int fd, std::uint32_t interest);

    int epoll_fd_ = -1;
    std::vector<Watch> watches_;  // indexed by descriptor number
    std::size_t descriptors_watched_ = 0;
    std::array<epoll_event, 1024> events_{};

    std::vector<std::shared_ptr<Timer>> timers_;  // a min-heap on (when, sequence)
    std::uint64_t timers_made_ = 0;

    // The ready queue: what the next turn runs, in the order it was queued. A turn swaps it with
    // running_ and runs that, so what a turn queues waits for the next one.
    std::vector<std::shared_ptr<Handle>> ready_;
    std::vector<std::shared_ptr<Handle>> running_;
    TaskBase* current_task_ = nullptr;
    TaskBase* first_task_ = nullptr;  // tasks started and not done, so ~EventLoop can destroy them
    std::uint64_t tasks_made_ = 0;    // numbers the default names: "Task-1", "Task-2", ...
    bool stopping_ = false;
    bool is_running_ = false;
    bool closed_ = false;  // ~EventLoop has begun on the callbacks
    std::size_t tasks_lost_in_unwinding_ = 0;  // see TaskBase::release
};

}  // namespace sixways::coroutines
