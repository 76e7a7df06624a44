// Stage 06's event loop: asyncio's BaseEventLoop in miniature.
//
// Stage 04 had a reactor: epoll, timers and a ready queue calling callbacks. This loop is the same
// machine with one more kind of work in its ready queue: the next step of a Task, the object that
// drives a coroutine (task.hpp). Everything else in this stage (Future, sleep, gather, Queue, the
// socket helpers, the fetch itself) is built on the few calls below.
//
//   EventLoop loop;
//   loop.call_soon([] { ... });                       // on the next turn, never inside this one
//   TimerHandle t = loop.call_later(2s, [] { ... });  // once, 2 s from now
//   t.cancel();                                       // it will never run
//   loop.add_reader(fd, [] { ... });                  // every turn in which fd is readable
//   loop.remove_reader(fd);                           // when the wait is over
//   loop.remove_and_close(fd);                        // instead of close(fd), once it was watched
//   Task<int> task = loop.create_task(work());        // starts on the next turn
//   int answer = loop.run_until_complete(task);       // turns the loop until the task is done
//
// One thread only: nothing here may be called from another thread.
#pragma once

#include <sys/epoll.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/duration.hpp"

namespace sixways::coroutines {

using Callback = std::function<void()>;

class EventLoop;
template <class T>
class Future;
template <class T>
class Task;

namespace detail {
class FutureState;
class TaskBase;

// A callback with a deadline, kept in the loop's timer heap (asyncio: events.TimerHandle).
struct Timer {
    Clock::time_point when;
    std::uint64_t sequence;  // order of scheduling: breaks ties between equal deadlines
    Callback callback;
    EventLoop* loop;         // used only while in_heap: the loop counts its cancelled timers
    bool cancelled = false;
    bool in_heap = true;     // false once it has run, been dropped, or its loop is gone
};
}  // namespace detail

// What call_at and call_later return: the way to cancel the timer. Copyable; every copy names the
// same timer. A default-constructed handle names no timer.
class TimerHandle {
public:
    TimerHandle() = default;

    // After cancel() the callback never runs, even if it is due in the very turn that is running.
    // Its captures are released at once (unless it is the callback running right now). Cancelling
    // twice, after the callback ran, after the loop was destroyed, or through an empty handle does
    // nothing.
    void cancel();
    bool cancelled() const { return timer_ && timer_->cancelled; }
    Clock::time_point when() const { return timer_ ? timer_->when : Clock::time_point{}; }

private:
    friend class EventLoop;
    explicit TimerHandle(std::shared_ptr<detail::Timer> timer) : timer_(std::move(timer)) {}
    std::shared_ptr<detail::Timer> timer_;
};

// Cancels a timer when it goes out of scope, however the scope is left: Python's
// `try: ... finally: timer.cancel()`. In a coroutine, that includes the frame being destroyed.
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
    // Destroys every task that is still pending (each says so on stderr: "Task was destroyed but it
    // is pending!"), which runs their local destructors: sockets close, readers and timers go.
    ~EventLoop();
    EventLoop(const EventLoop&) = delete;
    EventLoop& operator=(const EventLoop&) = delete;

    // The loop's clock: monotonic, so timers do not jump when the wall clock is set.
    Clock::time_point time() const { return Clock::now(); }

    // ---- Callbacks ----
    // Every callback runs inside run_once, one at a time, on the loop's own stack. A callback that
    // throws does not stop the loop: the exception is reported on stderr (as asyncio's default
    // exception handler does) and the turn goes on.

    // Calls `callback` once, on the next turn (never inside the current one).
    void call_soon(Callback callback);
    // Calls `callback` once, on the first turn after time() reaches `when`, never before it.
    // Timers with equal deadlines run in the order they were scheduled.
    TimerHandle call_at(Clock::time_point when, Callback callback);
    TimerHandle call_later(Duration delay, Callback callback);

    // ---- Descriptors ----
    // Calls `callback` on every turn in which fd is readable, or has an error or a hang-up to report
    // (the callback's own recv() says which), until remove_reader(fd). Level-triggered: a callback
    // that leaves bytes unread is called again on the next turn. A second add_reader for the same fd
    // replaces the first. Throws std::invalid_argument for a negative fd or an empty callback, and
    // std::system_error if epoll refuses a descriptor it did not have yet.
    void add_reader(int fd, Callback callback);
    // The same for writable. A socket is writable nearly all the time: remove a writer as soon as
    // there is nothing left to write, or the loop never sleeps.
    void add_writer(int fd, Callback callback);
    // Returns false if there was nothing to remove. The callback is never called again, even for
    // an event this turn has already collected. Never throws, so destructors may call them.
    bool remove_reader(int fd);
    bool remove_writer(int fd);
    // Removes fd's reader and writer, if any, and closes fd. Close a descriptor this loop has
    // watched this way rather than with close(fd): the loop hands its changes to epoll in a batch,
    // just before it polls (see apply_changes), and must hear that the number is free before the
    // kernel gives it to the next socket. It also saves a system call: close() takes a socket out
    // of epoll by itself (when no other descriptor refers to it), so no EPOLL_CTL_DEL is needed.
    void remove_and_close(int fd);

    // ---- Tasks (defined in task.hpp) ----
    // Schedules the task's first step for the next turn and returns it. Keep the returned handle:
    // the loop holds only weak references to its tasks, so a task whose last handle is dropped is
    // destroyed (asyncio's documentation gives the same warning about create_task). An empty name
    // gives "Task-N". Throws InvalidStateError if the task was already started.
    template <class T>
    [[nodiscard]] Task<T> create_task(Task<T> task, std::string name = {});

    // ---- Running ----
    // Turns the loop until `future` is done, then returns its result or rethrows its exception
    // (CancelledError if it was cancelled). An unstarted task is started first. Throws
    // std::logic_error if the loop runs out of work while the future is still pending: nothing
    // could ever complete it (a task waiting on a Queue nobody puts into, say), and waiting for
    // ever would hang the program instead of telling you.
    template <class T>
    T run_until_complete(Future<T> future);  // defined in future.hpp
    template <class T>
    T run_until_complete(Task<T> task);      // defined in task.hpp

    // Turns the loop until stop() is called. Throws std::logic_error when there is nothing left
    // to wait for (no ready callback, no timer, no descriptor), since nothing could call stop().
    void run_forever();
    // Makes run_forever return after the turn that is running (or the next one) has finished.
    void stop() { stopping_ = true; }
    bool is_running() const { return running_; }

    // What the loop would wait for, for tests and for debugging a program that hangs: timers not
    // cancelled, and descriptors with a reader or a writer.
    std::size_t pending_timers() const { return timers_.size() - cancelled_in_heap_; }
    std::size_t watched_descriptors() const { return watched_; }

private:
    friend class TimerHandle;
    friend class detail::FutureState;
    friend class detail::TaskBase;

    // What the ready queue holds: a callback, or the next step of a task. The task is held weakly:
    // if it is destroyed before its turn comes, the entry is skipped (see task.hpp, "Who owns the
    // frame").
    struct Ready {
        std::weak_ptr<detail::TaskBase> task;
        Callback callback;
    };

    // The reader and writer of one descriptor. epoll holds one registration per descriptor, whose
    // interest set is the union of the two.
    enum class Direction { read, write };
    struct Watch {
        Callback reader;
        Callback writer;
        bool reading = false;          // a reader is registered (its callback may be running)
        bool writing = false;
        std::uint32_t registered = 0;  // what epoll has now: 0, EPOLLIN, EPOLLOUT or both
        std::uint32_t generation = 0;  // goes up each time nobody wants the number (see run_once)
        bool changed = false;          // in changed_: epoll has not heard of the last change yet
        bool emptied = false;          // this batch of changes left it unwanted for a while

        bool wants(Direction d) const { return d == Direction::read ? reading : writing; }
        bool wanted() const { return reading || writing; }
        std::uint32_t interest() const { return (reading ? EPOLLIN : 0u) | (writing ? EPOLLOUT : 0u); }
        Callback& callback(Direction d) { return d == Direction::read ? reader : writer; }
    };

    void run_once();
    int poll_timeout_ms();
    bool has_work() const;
    void run_io(int fd, std::uint32_t generation, Direction direction);
    void run_due_timers();
    void run_ready();
    static void run_callback(Callback& callback);

    void add_watch(int fd, Direction direction, Callback callback);
    bool remove_watch(int fd, Direction direction);
    void note_change(int fd);
    void apply_changes();

    void drop_cancelled_timers();

    // For tasks (task.cpp): their steps go to the ready queue, and the loop keeps a list of the
    // tasks it has started so that its destructor can destroy the ones still pending.
    void schedule_step(detail::TaskBase& task);
    detail::TaskBase* first_task_ = nullptr;
    std::uint64_t tasks_created_ = 0;  // numbers the default names: "Task-1", "Task-2", ...

    int epoll_fd_ = -1;
    std::vector<Watch> watches_;  // indexed by descriptor number: O(1), no hashing
    std::vector<int> changed_;    // descriptors whose change epoll has not heard of yet
    std::size_t watching_ = 0;    // readers + writers registered
    std::size_t watched_ = 0;     // descriptors with a reader or a writer
    std::array<epoll_event, 1024> events_{};

    std::vector<std::shared_ptr<detail::Timer>> timers_;  // a min-heap on (when, sequence)
    std::size_t cancelled_in_heap_ = 0;
    std::uint64_t next_sequence_ = 0;

    std::deque<Ready> ready_;
    bool stopping_ = false;
    bool running_ = false;
};

}  // namespace sixways::coroutines
