// Stage 06's event loop: asyncio's BaseEventLoop in miniature.
//
// tiny.cpp showed the whole machine in one file. This is the same loop with what a real program
// needs on top, and what changes from tiny:
//   - timers (call_later), which deadlines and sleep are made of, and a way to cancel them;
//   - a reader or writer runs as soon as epoll reports its descriptor, during the scan of the
//     events, instead of going through the ready queue first (as in stage 04). That saves a queue
//     entry per event, but then a callback can close a descriptor whose event is still waiting
//     later in the same batch: run_once explains the guard against such stale events;
//   - a task's step is an entry of the ready queue of its own, and a task that nobody holds any
//     more is skipped, not stepped;
//   - a registration that only its owner can remove (Registration), for the socket waits.
// Everything else in this stage (Future, Task, sleep, wait_for, gather, Queue, the socket calls,
// the fetch itself) is built on the few calls below.
//
//   EventLoop loop;
//   loop.call_soon([] { ... });                       // on the next turn, never inside this one
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
// A callback with a deadline (asyncio: events.TimerHandle). Shared by the loop and the handles.
struct Timer {
    Clock::time_point when;
    std::uint64_t sequence;  // order of scheduling: breaks ties between equal deadlines
    Callback callback;
    EventLoop* loop;         // null once the timer has left the heap (ran, dropped, or loop gone)
    bool cancelled = false;
};
}  // namespace detail

// What call_at and call_later return: the way to cancel the timer. Copies name the same timer.
class TimerHandle {
public:
    TimerHandle() = default;
    // After cancel() the callback never runs, even if it is due in the turn that is running, and
    // what it captured is released now. Safe whoever owns this handle, even the callback itself.
    // Cancelling twice, after the callback ran, or after the loop is gone does nothing.
    void cancel();
    bool cancelled() const { return timer_ && timer_->cancelled; }

private:
    friend class EventLoop;
    explicit TimerHandle(std::shared_ptr<detail::Timer> timer) : timer_(std::move(timer)) {}
    std::shared_ptr<detail::Timer> timer_;
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

// One reader or writer, as add_reader or add_writer registered it. remove(registration) removes it
// only if it is still the one registered: a wait that ends late cannot remove the wait of a newer
// socket that was given the same descriptor number meanwhile.
struct Registration {
    int fd = -1;
    bool writer = false;
    std::uint64_t id = 0;
};

class EventLoop {
public:
    EventLoop();  // throws std::system_error if epoll_create1 fails
    // Destroys every task still pending (each says "Task was destroyed but it is pending!"), which
    // runs the destructors in their frames: sockets close, readers and timers go. (Tasks destroyed
    // while an exception unwinds, std::bad_alloc say, are counted and reported here once.) Then the
    // callbacks: from then on call_soon, call_at, call_later and add_* drop their callback and do
    // nothing, and remove_* return false, so that a callback's destructor may call them.
    ~EventLoop();
    EventLoop(const EventLoop&) = delete;
    EventLoop& operator=(const EventLoop&) = delete;

    // Monotonic: timers do not jump when the wall clock is set.
    Clock::time_point time() const { return Clock::now(); }

    // ---- Callbacks. Each runs in run_once, on the loop's own stack. One that throws is reported
    // on stderr (as asyncio's default exception handler does) and the turn goes on. ----

    // Once, on the next turn (never inside this call).
    void call_soon(Callback callback);
    // Once, on the first turn after time() reaches `when`; equal deadlines in scheduling order.
    TimerHandle call_at(Clock::time_point when, Callback callback);
    // A delay too long for the clock (Duration::max()) means "never", not an overflow.
    TimerHandle call_later(Duration delay, Callback callback);

    // ---- Descriptors. Level-triggered: a reader is called on every turn in which fd is readable
    // (or has an error or hang-up to report: its own recv() says which), until it is removed. ----

    // A second add_reader for the same fd replaces the first. Throws std::invalid_argument for a
    // negative fd or an empty callback, std::system_error if epoll refuses the descriptor.
    Registration add_reader(int fd, Callback callback);
    // The same for writable. A socket is writable nearly always: remove the writer as soon as there
    // is nothing left to write, or the loop never sleeps.
    Registration add_writer(int fd, Callback callback);
    // Return false if there was nothing to remove. The callback is never called again, even for an
    // event this turn has already collected. Never throw, so destructors may call them. Remove a
    // descriptor's reader and writer BEFORE you close it (Socket does).
    bool remove_reader(int fd);
    bool remove_writer(int fd);
    bool remove(const Registration& registration);

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
    void run_forever();
    // run_forever returns after the turn that is running (or the next one: a stop() before
    // run_forever is remembered, and that run makes one turn).
    void stop() { stopping_ = true; }

    // What the loop would wait for, for tests and for debugging a program that hangs.
    std::size_t pending_timers() const { return timers_.size() - cancelled_in_heap_; }
    std::size_t watched_descriptors() const { return descriptors_watched_; }

private:
    friend class TimerHandle;
    friend class TaskBase;
    friend class detail::FutureBase;  // schedules the steps of the tasks waiting on it

    // One entry of the ready queue: a callback, a timer that came due, or a task's next step. The
    // task is held weakly: a task destroyed before its turn came is skipped.
    struct Ready {
        Callback callback;
        std::shared_ptr<detail::Timer> timer;
        std::weak_ptr<TaskBase> task;
    };
    // The reader and writer of one descriptor; epoll holds one registration with both interests.
    struct Watch {
        Callback reader;
        Callback writer;
        std::uint64_t reader_id = 0;   // 0: no reader
        std::uint64_t writer_id = 0;
        std::uint32_t generation = 0;  // goes up each time the descriptor leaves epoll
        bool watched() const { return reader_id != 0 || writer_id != 0; }
        std::uint32_t interest() const { return (reader_id ? EPOLLIN : 0u) | (writer_id ? EPOLLOUT : 0u); }
    };

    void run_once();
    void run_io(int fd, std::uint32_t generation, bool writer);
    void run_ready();
    static void run_callback(Callback& callback);
    int poll_timeout_ms();
    Registration add_watch(int fd, bool writer, Callback callback);
    bool remove_watch(int fd, bool writer, std::uint64_t id);
    void schedule_step(TaskBase& task);

    int epoll_fd_ = -1;
    std::vector<Watch> watches_;  // indexed by descriptor number
    std::uint64_t registrations_ = 0;
    std::size_t callbacks_watching_ = 0;   // readers + writers
    std::size_t descriptors_watched_ = 0;  // descriptors with a reader or a writer
    std::array<epoll_event, 1024> events_{};

    std::vector<std::shared_ptr<detail::Timer>> timers_;  // a min-heap on (when, sequence)
    std::size_t cancelled_in_heap_ = 0;
    std::uint64_t timers_made_ = 0;

    // The ready queue: what the next turn runs, in the order it was scheduled. A turn swaps it
    // with running_now_ and runs that, so what a turn schedules waits for the next one.
    std::vector<Ready> ready_;
    std::vector<Ready> running_now_;
    TaskBase* current_task_ = nullptr;
    TaskBase* first_task_ = nullptr;  // tasks started and not done, so ~EventLoop can destroy them
    std::uint64_t tasks_made_ = 0;    // numbers the default names: "Task-1", "Task-2", ...
    bool stopping_ = false;
    bool running_ = false;
    bool closed_ = false;  // ~EventLoop has begun on the callbacks
    std::size_t tasks_lost_in_unwinding_ = 0;  // see TaskBase::release
};

}  // namespace sixways::coroutines
