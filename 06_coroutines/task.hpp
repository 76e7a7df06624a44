// A Task: a Future whose result is computed by a coroutine (asyncio: tasks.Task).
//
//   Task<int> answer() {                       // a coroutine: it uses co_await / co_return
//       co_await sleep(loop, 100ms);          // waits without blocking the loop
//       co_return 42;
//   }
//   Task<int> task = loop.create_task(answer());  // nothing runs yet: it starts on the next turn
//   int x = co_await task;                        // in another task: a Task is a Future
//   task.cancel();                                // CancelledError inside the coroutine
//
// The 500 Lines crawler's Task is ten lines: step() sends the last result into the generator,
// which runs until it yields the next future it waits for; step() then adds itself as that
// future's done callback, so the future, when it finishes, calls step() again. This Task is the
// same machine in C++20:
//
//   - Calling a coroutine function creates its frame and a Task, suspended before its first line
//     (like calling an `async def` in Python makes a coroutine object and runs nothing).
//   - create_task puts the task's first step in the loop's ready queue. A step resumes the
//     coroutine, which runs until its next `co_await` on a future that is not done yet.
//   - That co_await puts the task on the future's list of waiters and suspends. When the future
//     finishes, it puts the task's next step in the ready queue (future.cpp, FutureState::finish).
//   - co_await on a Task that was never started runs its first step at once, inside the awaiting
//     step, like a function call (asyncio's `await coro()` does the same), and then, unless it
//     finished already, waits for it like any future: `int x = co_await answer();` just works.
//     create_task and gather start their tasks on the next turn instead, so that many run side
//     by side. (wait_for awaits its one task, so it starts like a function call too.)
//
// No coroutine ever RESUMES another one. A library built on symmetric transfer resumes the
// awaiting coroutine straight from the finishing one, which is only safe when the compiler turns
// that into a tail call; g++ 12 does not promise it at -O0, -O1 or under AddressSanitizer, and a
// long chain of awaits that complete at once then overflows the stack. Here a suspended coroutine
// is resumed only by its step, and a step runs only from run_once, at depth one, whatever came
// before it. Starting a child nests on the stack the way calling a function does: a loop of a
// million co_awaits runs in constant stack (each child returns before the next starts), and only
// recursion as deep as the stack allows is allowed, as for any recursive function (Python stops
// at a depth of 1000).
//
// The invariant (asyncio writes it in tasks.py): a started task that is not done is, at any time,
// in exactly one of three states:
//   - scheduled: its next step is in the ready queue;
//   - waiting:   suspended in co_await on a pending future, on that future's list of waiters;
//   - running:   inside its step.
// A task cannot suspend any other way: TaskPromiseBase::await_transform accepts only futures
// (tasks included), so `co_await` on anything else does not compile. A task that slipped out of all three
// states would never run again, and nothing would say why.
//
// Who owns the frame
// ------------------
// - Every Task handle shares one state (the future's state plus the coroutine frame). The state
//   owns the frame. When the last handle goes, the state destroys the frame, which runs the
//   destructors of everything in it: sockets close, readers and timers are removed, the tasks it
//   held go too. If the task was still pending, it says so on stderr, as asyncio does:
//   "Task was destroyed but it is pending!". So keep the handle that create_task returns.
// - The loop's ready queue holds the task weakly: a step scheduled for a task that has since been
//   destroyed is skipped. While a step runs, run_once holds a strong reference, so a task is
//   never destroyed in the middle of its own step.
// - The future a task waits on holds a plain pointer to the task (its list of waiters). A task
//   being destroyed takes itself off that list first, so the pointer never dangles.
// - The loop keeps a list of the tasks it started, to destroy the pending ones when it is
//   destroyed itself.
// - A task that finishes destroys its frame at once (its result is in the shared state), so a
//   finished task costs only its small state, and "done" means everything it held is released.
//
// Cancellation (asyncio's rules)
// ------------------------------
// cancel() is a request, delivered as a CancelledError thrown out of one co_await inside the
// coroutine, which may catch it (to clean up, or even to carry on). Where it is thrown depends on
// the task's state when cancel() is called:
//   - waiting on a future: that future is cancelled, and the co_await waiting on it throws;
//   - scheduled, because the future it waited on has just finished: the co_await it is about to
//     return from throws instead of returning the result;
//   - running: a flag is set, and the first co_await that suspends from then on throws;
//   - not started yet: its body never runs at all.
// A CancelledError that leaves the coroutine makes the task cancelled.
//
// One difference from asyncio, and why. In asyncio, `await queue.get()` runs get() inside the
// awaiting task. Here every coroutine you co_await is a task of its own, so between a child task
// finishing and its parent's next step there is a turn in which the parent can be cancelled.
// asyncio's rule ("throw CancelledError at that co_await") would then throw the child's finished
// work away: an item taken off a Queue, lost. So when the future a task waited on is a Task that
// finished successfully, its result is delivered, and the cancellation waits for the parent's next
// suspension. For every other future (a timer, a socket, a Queue's wake-up) asyncio's rule holds.
//
// The same difference means a cancel passed down to a child task may come back unused: the child
// keeps it for its next suspension, and may finish without one. The parent then takes it back
// (TaskBase::resume_from_wait): it gets the child's result and its own next suspension throws; or,
// if the child failed, its co_await throws CancelledError instead of the child's exception, which
// is dropped (asyncio's rule again: a cancellation wins over what the awaited future holds). A
// cancel() that returned true is thrown somewhere, exactly once, unless the task finishes first.
#pragma once

#include <coroutine>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "06_coroutines/event_loop.hpp"
#include "06_coroutines/future.hpp"

namespace sixways::coroutines {

namespace detail {

// The untyped half of a task: its frame and how it is driven. task.cpp.
class TaskBase : public std::enable_shared_from_this<TaskBase> {
public:
    TaskBase(const TaskBase&) = delete;
    TaskBase& operator=(const TaskBase&) = delete;

    // Hands the task to `loop` and schedules its first step. Throws InvalidStateError if it was
    // handed to a loop already.
    void start(EventLoop& loop, std::string name);
    // Hands the task to `loop` and runs its first step now (co_await on an unstarted task).
    void start_now(EventLoop& loop);
    bool started() const { return future_.loop() != nullptr; }
    EventLoop* loop() const { return future_.loop(); }
    std::string name() const;

    // One step: resume the coroutine until it waits on a pending future or finishes. Called by the
    // loop's run_once, and by start_now for the first step of a task started by co_await.
    void step();

    // The loop is being destroyed: destroy the frame now, while the loop still exists.
    void abandon();

    // The awaiting side of `co_await future` (FutureAwaiter below).
    void suspend_on(FutureState& future);
    // Throws CancelledError if cancel() came after `awaited` finished, unless `awaited` is a
    // child task that finished successfully (see "Cancellation" above).
    void resume_from_wait(FutureState& awaited);

    // How the coroutine ended, recorded by the promise before its final suspension.
    void store_failure(std::exception_ptr failure) { failure_ = std::move(failure); }

protected:
    TaskBase(std::coroutine_handle<> frame, FutureState& future) : frame_(frame), future_(future) {}
    ~TaskBase() = default;

    bool cancel_task();
    bool pass_cancel_down();
    std::string describe() const;
    // Destroys the frame. Called by the most derived destructor, while the whole object exists.
    void release_frame();

private:
    friend class sixways::coroutines::detail::FutureState;  // links waiters through next_waiter_
    void attach(EventLoop& loop, std::string name);
    void complete();
    void unlink_from_loop();

    std::coroutine_handle<> frame_;  // null once the coroutine finished or was destroyed
    FutureState& future_;            // this task's own future: the other half of the same object
    FutureState* waiting_on_ = nullptr;  // the future of our current co_await, while suspended there
    TaskBase* next_waiter_ = nullptr;    // next in waiting_on_'s list of waiters
    TaskBase* previous_task_ = nullptr;  // the loop's list of started tasks
    TaskBase* next_task_ = nullptr;
    std::exception_ptr failure_;
    std::string name_;             // as given to create_task; empty: "Task-<number_>"
    std::uint64_t number_ = 0;     // counts the loop's tasks, from 1; 0 until started
    bool first_step_done_ = false;
    bool must_cancel_ = false;          // cancel() was accepted; the CancelledError is still to come
    bool cancel_passed_down_ = false;   // ... and it was handed to the child task we await
    bool finished_with_unused_cancel_ = false;  // done before it could throw an accepted cancel()
};

// The whole state of one task: its future (with the typed result) and its driver.
template <class T>
class TaskState final : public ValueState<T>, public TaskBase {
public:
    explicit TaskState(std::coroutine_handle<> frame) : ValueState<T>(nullptr), TaskBase(frame, *this) {}
    ~TaskState() override { release_frame(); }

    bool cancel() override { return cancel_task(); }
    std::string to_string() const override { return describe(); }
    TaskBase* task() override { return this; }

    // The value of `co_return`, kept until the coroutine has finished (TaskBase::complete).
    template <class U>
    void store_value(U&& value) {
        this->value_.emplace(std::forward<U>(value));
    }
};

// What `co_await future` does inside a task. The awaiter is a temporary in the awaiting frame and
// holds a handle to the future, so the future lives at least as long as the wait.
template <class T>
class FutureAwaiter {
public:
    FutureAwaiter(std::shared_ptr<ValueState<T>> state, TaskBase& task) : state_(std::move(state)), task_(task) {}

    // A future that is done already costs no suspension and no turn of the loop.
    bool await_ready() const noexcept { return state_->done(); }
    void await_suspend(std::coroutine_handle<>) {
        task_.suspend_on(*state_);
        suspended_ = true;
    }
    T await_resume() {
        if (suspended_) task_.resume_from_wait(*state_);
        if constexpr (std::is_void_v<T>) {
            state_->result();
        } else {
            // Moved out when this awaiter holds the last handle: `co_await some_task()`,
            // `co_await std::move(future)`. Copied otherwise.
            return copy_or_take_result(state_);
        }
    }

private:
    std::shared_ptr<ValueState<T>> state_;
    TaskBase& task_;
    bool suspended_ = false;
};

// What every task's promise shares. The promise is the compiler's hook into the coroutine: it
// makes the Task when the coroutine is called, decides where it suspends at the start and the
// end, and gets what co_return returns or the exception that escapes.
class TaskPromiseBase {
public:
    // Suspended before the first line: the loop runs the first step, never the caller.
    std::suspend_always initial_suspend() const noexcept { return {}; }
    // Suspended after the last line, so that TaskBase::step sees the coroutine is done and
    // destroys the frame itself (a frame that destroyed itself would leave step() a dangling
    // handle).
    std::suspend_always final_suspend() const noexcept { return {}; }
    void unhandled_exception() { task_->store_failure(std::current_exception()); }

    // The only thing a task can co_await: a Future, which may be a Task's (a Task is a Future). A
    // Task that was never started runs its first step here and now.
    template <class U>
    FutureAwaiter<U> await_transform(const Future<U>& future) {
        return awaiter_for(future.state_);
    }
    template <class U>
    FutureAwaiter<U> await_transform(Future<U>&& future) {
        return awaiter_for(std::move(future.state_));
    }

protected:
    template <class U>
    FutureAwaiter<U> awaiter_for(std::shared_ptr<ValueState<U>> state) {
        TaskBase* child = state->task();
        if (child != nullptr && !child->started()) child->start_now(*task_->loop());
        return FutureAwaiter<U>(std::move(state), *task_);
    }
    TaskBase* task_ = nullptr;
};

template <class T>
class TaskPromise : public TaskPromiseBase {
public:
    Task<T> get_return_object();
    void return_value(T value) { state_->store_value(std::move(value)); }

private:
    TaskState<T>* state_ = nullptr;
};

template <>
class TaskPromise<void> : public TaskPromiseBase {
public:
    Task<void> get_return_object();
    void return_void() {}
};

}  // namespace detail

template <class T>
class Task : public Future<T> {
public:
    using promise_type = detail::TaskPromise<T>;

    // cancel(), done(), result(), add_done_callback() and the rest come from Future. cancel() on a
    // task is asyncio's Task.cancel (see "Cancellation" above): true if the request was made,
    // false if the task was already done.

    // Handed to a loop yet (by create_task, co_await, gather, wait_for or run_until_complete)?
    bool started() const { return task_state().started(); }
    // "Task-3", or the name given to create_task.
    std::string name() const { return task_state().name(); }

private:
    // A task's result is what its coroutine returns: nobody else may set it.
    using Future<T>::set_result;
    using Future<T>::set_exception;

    friend class detail::TaskPromise<T>;
    friend class EventLoop;
    explicit Task(std::shared_ptr<detail::TaskState<T>> state) : Future<T>(std::move(state)) {}
    detail::TaskState<T>& task_state() const { return static_cast<detail::TaskState<T>&>(*this->state_); }
};

namespace detail {

template <class T>
Task<T> TaskPromise<T>::get_return_object() {
    auto state = std::make_shared<TaskState<T>>(std::coroutine_handle<TaskPromise>::from_promise(*this));
    state_ = state.get();
    task_ = state.get();
    return Task<T>(std::move(state));
}

inline Task<void> TaskPromise<void>::get_return_object() {
    auto state = std::make_shared<TaskState<void>>(std::coroutine_handle<TaskPromise>::from_promise(*this));
    task_ = state.get();
    return Task<void>(std::move(state));
}

}  // namespace detail

template <class T>
Task<T> EventLoop::create_task(Task<T> task, std::string name) {
    task.task_state().start(*this, std::move(name));
    return task;
}

template <class T>
T EventLoop::run_until_complete(Task<T> task) {
    if (!task.started()) task.task_state().start(*this, {});
    return run_until_complete(static_cast<Future<T>>(std::move(task)));
}

// Starts `task` on `loop` unless it was started already; for gather, which accepts either.
template <class T>
void ensure_started(EventLoop& loop, Task<T>& task) {
    if (!task.started()) task = loop.create_task(std::move(task));
}

}  // namespace sixways::coroutines
