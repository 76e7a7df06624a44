// Coroutine and Task: how coroutines run on the loop (asyncio: a coroutine, and tasks.Task).
//
//   Coroutine<int> answer(EventLoop& loop) {         // a coroutine: it uses co_await / co_return
//       co_await sleep(loop, 100ms);                 // waits without blocking the loop
//       co_return 42;
//   }
//   int x = co_await answer(loop);                   // in a coroutine: runs inside the same task
//   Task<int> task = loop.create_task(answer(loop)); // runs side by side, from the next turn
//   int y = co_await task;                           // a Task is a Future
//   task.cancel();                                   // CancelledError inside the coroutine
//
// Calling a coroutine function runs nothing: it makes the frame and returns a Coroutine, suspended
// before its first line (calling an `async def` in Python makes a coroutine object the same way).
// Something must then run it: a task, or another coroutine that co_awaits it.
//
// How a task runs
// ---------------
// tiny.cpp's Task steps one coroutine from one Future to the next. Here a coroutine may also
// co_await another coroutine, which runs inside the same task, as asyncio's `await coro()` does:
// only create_task (and so gather, which takes tasks) makes a task. So a task keeps a stack of
// coroutine frames: the one it was made with at the bottom, the one running on top. A step is a
// loop (TaskBase::step): resume the top frame; it runs until it
//   - co_awaits a Future that is not done: the task waits; the Future schedules the next step;
//   - co_awaits a Coroutine: the child is pushed on the stack, and the loop resumes it next;
//   - finishes: it is popped, and the loop resumes its parent, which takes the result.
// No coroutine ever resumes another. Libraries built on symmetric transfer resume the parent
// straight from the child's end, which is safe only when the compiler makes that a tail call; g++
// 12 does not promise it at -O0, -O1 or under AddressSanitizer, and a long run of awaits that
// complete at once overflows the stack. Here every resume comes from the step's loop, and every
// step from run_once, so a million awaits in a row run in constant stack.
//
// The invariant (asyncio writes it in tasks.py): a task that is not done is, at any time, exactly
// one of: scheduled (its next step is in the ready queue), waiting (on the waiter list of the one
// future its top frame awaits), or running (inside its step). A coroutine cannot suspend any other
// way: await_transform below accepts only Futures and Coroutines.
//
// The types
// ---------
//   Task<T> (a handle; copies share) ──► TaskState<T>, which is two things at once:
//       ├─ a FutureState<T>: the result to come and its waiters (what a Future<T> handle shares)
//       ├─ a TaskBase: frames_, waiting_on_, its step, its cancel count (the part without T)
//       └─ and it owns body_, the Coroutine<T> the task was made with: the bottom frame
//   each frame's promise (Promise<T>) ──task_──► the TaskBase that runs it
//   co_await future    → a FutureAwaiter: puts the TaskBase on the future's waiters
//   co_await coroutine → a CoroutineAwaiter: owns the child's frame, and pushes it on frames_
//
// Who owns what
// -------------
// A Task handle shares the task's state, which owns the bottom frame; each frame owns the child it
// awaits (the awaiter holding it is a temporary in the parent's frame). When the last handle goes,
// the frames go, and with them everything in them: sockets close, readers and timers are removed.
// A task destroyed while pending says so on stderr, as asyncio does ("Task was destroyed but it is
// pending!"). Neither the ready queue nor a future keeps a task alive: the queue holds its step's
// Handle, which a task being destroyed flags cancelled, and a future holds its waiters by plain
// pointer, and a task being destroyed takes itself off that list first.
//
// Cancellation (asyncio's rules, 3.11 and later)
// ----------------------------------------------
// One rule: cancel() marks the task and wakes it, and the co_await it wakes in throws
// CancelledError, which the coroutine may catch (to clean up, or even carry on). What it was
// awaiting is cancelled too: a Task passes the cancel on to its own coroutine, a socket wait stops
// watching. The rule covers every state a task can be in:
//   - waiting on a future: it leaves the future's waiters and is woken;
//   - scheduled (woken already): the co_await it wakes in throws all the same;
//   - running (it cancelled itself): the next co_await that would suspend does not, and throws;
//     if the coroutine ends first, the task ends cancelled all the same;
//   - not started: it is woken at its start, before its first line, and its body never runs.
// A task also counts its cancel requests (cancelling(); uncancel() takes one back). That is how a
// timeout tells its own cancel from someone else's: wait_for turns a CancelledError into
// TimeoutError only when its deadline caused it and no other request came (wait_for.hpp).
#pragma once

#include <coroutine>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "06_coroutines/event_loop.hpp"
#include "06_coroutines/future.hpp"

namespace sixways::coroutines {

namespace detail {
template <class T>
class Promise;
template <class T>
class TaskState;
template <class T>
class FutureAwaiter;
template <class T>
class CoroutineAwaiter;
}  // namespace detail

// What a coroutine function returns: its frame, not started. Run it with co_await (inside the
// awaiting task) or create_task (as a task of its own). Move-only; destroying it destroys the frame.
template <class T>
class [[nodiscard]] Coroutine {
public:
    using promise_type = detail::Promise<T>;
    Coroutine() = default;
    Coroutine(Coroutine&& other) noexcept : frame_(std::exchange(other.frame_, {})) {}
    ~Coroutine() {
        if (frame_) frame_.destroy();
    }

private:
    friend class detail::Promise<T>;
    friend class detail::TaskState<T>;
    template <class U>
    friend class detail::CoroutineAwaiter;
    friend class EventLoop;
    explicit Coroutine(std::coroutine_handle<promise_type> frame) : frame_(frame) {}
    std::coroutine_handle<promise_type> frame_;
};

// The untyped part of a task: its stack of frames, its step, its cancellation. task.cpp.
class TaskBase : public std::enable_shared_from_this<TaskBase> {
public:
    TaskBase(const TaskBase&) = delete;
    TaskBase& operator=(const TaskBase&) = delete;

    // asyncio's Task.cancel (see "Cancellation" above). Returns false if the task is done already.
    bool cancel();
    // Cancel requests not taken back (asyncio: Task.cancelling).
    int cancelling() const { return cancel_requests_; }
    // Takes one request back and returns how many are left (asyncio: Task.uncancel). For code that
    // cancelled the task itself and has handled the CancelledError, like a timeout.
    int uncancel();
    // "Task-3", or the name given to create_task.
    std::string name() const { return name_.empty() ? "Task-" + std::to_string(number_) : name_; }
    // "<Task pending name=request 7 wait_for=<Future pending>>", wait_for= naming what it is
    // waiting for, as asyncio's Task prints it.
    std::string describe() const;

protected:
    TaskBase(detail::FutureBase& future, std::coroutine_handle<> body, detail::PromiseBase& body_promise,
             std::string name);
    ~TaskBase() {
        if (step_) step_->cancelled = true;  // a step still queued must not run
    }
    // Destroys the frames if the task is not done. The most derived destructor calls it.
    void release();
    // Moves the bottom frame's result into the future if `keep`, then destroys the frame.
    virtual void free_body(bool keep) = 0;

private:
    friend class EventLoop;
    friend class detail::FutureBase;  // links waiters through next_waiter_
    friend class detail::PromiseBase;
    template <class U>
    friend class detail::FutureAwaiter;
    template <class U>
    friend class detail::CoroutineAwaiter;

    void start(EventLoop& loop);
    void wake();  // queues the next step
    void step();
    void complete();
    void abandon();
    void unlink_from_loop();
    // co_await on a pending future: running -> waiting. False: cancelled, do not wait (see above).
    bool wait_on(detail::FutureBase& future);
    void throw_if_cancelled();                 // after a wait: a cancel that came too late for it
    void push(std::coroutine_handle<> child, const detail::PromiseBase& promise);

    // A frame on the task's stack, and its promise (for --explain: its function's name, and
    // whether it ended by an exception).
    struct Frame {
        std::coroutine_handle<> handle;
        const detail::PromiseBase* promise;
    };

    detail::FutureBase& future_;                // this task's own future: the same object
    std::shared_ptr<Handle> step_;              // what the ready queue holds while it is scheduled
    std::vector<Frame> frames_;                 // [0] the coroutine it was made with; back() runs
    detail::PromiseBase* body_promise_;         // frames_[0]'s; null once it has finished
    detail::FutureBase* waiting_on_ = nullptr;  // the future its top frame awaits, while it waits
    TaskBase* next_waiter_ = nullptr;           // next in waiting_on_'s list of waiters
    TaskBase* previous_task_ = nullptr;         // the loop's list of tasks not done
    TaskBase* next_task_ = nullptr;
    std::string name_;
    std::uint64_t number_ = 0;
    int cancel_requests_ = 0;
    bool must_cancel_ = false;  // a request to throw at the next co_await that suspends
    bool started_ = false;
    mutable bool describing_ = false;  // describe() goes once round an await cycle
};

namespace detail {

// What `co_await future` does inside a task. The awaiter is a temporary in the awaiting frame and
// holds a handle to the future, so the future lives at least as long as the wait.
template <class T>
class FutureAwaiter {
public:
    FutureAwaiter(std::shared_ptr<FutureState<T>> state, TaskBase& task) : state_(std::move(state)), task_(task) {}
    // A future that is done already costs no suspension and no turn of the loop.
    bool await_ready() const noexcept { return state_->done(); }
    bool await_suspend(std::coroutine_handle<>) {
        suspended_ = true;
        return task_.wait_on(*state_);
    }
    T await_resume() {
        if (suspended_) task_.throw_if_cancelled();
        return take_or_copy(state_);  // moved out if this awaiter holds the last handle
    }

private:
    std::shared_ptr<FutureState<T>> state_;
    TaskBase& task_;
    bool suspended_ = false;
};

// What `co_await coroutine` does: push the child on the task's stack; the step resumes it next,
// and resumes this frame again once the child has finished. The awaiter owns the child's frame.
template <class T>
class CoroutineAwaiter {
public:
    CoroutineAwaiter(Coroutine<T> child, TaskBase& task) : child_(std::move(child)), task_(task) {
        if (!child_.frame_) throw std::invalid_argument("co_await on an empty Coroutine (moved from?)");
    }
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<>) {
        child_.frame_.promise().task_ = &task_;
        task_.push(child_.frame_, child_.frame_.promise());
    }
    T await_resume() { return child_.frame_.promise().take_result(); }

private:
    Coroutine<T> child_;
    TaskBase& task_;
};

// What every coroutine's promise shares. The promise is the compiler's hook into a coroutine: it
// makes the Coroutine when the function is called, decides where the frame suspends at its start
// and end, and keeps what co_return returns or the exception that escapes.
class PromiseBase {
public:
    explicit PromiseBase(const char* name) : name(name) {}
    // Suspended before the first line: it runs when a task or a co_await runs it.
    std::suspend_always initial_suspend() const noexcept { return {}; }
    // Suspended after the last line, so that the step sees it is done, and its owner (a task, or
    // the awaiter in the parent's frame) takes the result and then destroys the frame.
    std::suspend_always final_suspend() const noexcept { return {}; }
    void unhandled_exception() { error_ = std::current_exception(); }
    std::exception_ptr error() const { return error_; }

    // The only things a coroutine can co_await: a Future (a Task is one) and a Coroutine.
    template <class U>
    FutureAwaiter<U> await_transform(const Future<U>& future) {
        return FutureAwaiter<U>(future.state_, *task_);
    }
    template <class U>
    FutureAwaiter<U> await_transform(Future<U>&& future) {
        return FutureAwaiter<U>(std::move(future.state_), *task_);
    }
    template <class U>
    CoroutineAwaiter<U> await_transform(Coroutine<U>&& child) {
        return CoroutineAwaiter<U>(std::move(child), *task_);
    }

    TaskBase* task_ = nullptr;  // the task running this frame; set when a task or a parent runs it
    const char* name;           // of the coroutine function: "exchange", for --explain

protected:
    std::exception_ptr error_;
};

// A coroutine function's name, for Promise's constructor. A type of its own, made only explicitly:
// the compiler first tries to make a promise from the coroutine's own arguments, and a coroutine
// taking one `const char*` would otherwise be named after its argument.
struct FunctionName {
    explicit FunctionName(const char* name) : name(name) {}
    const char* name;
};

template <class T>
class Promise : public PromiseBase {
public:
    // A default argument is evaluated where the call is made, and the promise is made in the body
    // of the coroutine function: so this is that function's name. (std::source_location would say
    // the same, but clang 14 does not offer it with g++ 12's library; both compilers have this.)
    explicit Promise(FunctionName name = FunctionName(__builtin_FUNCTION())) : PromiseBase(name.name) {}
    Coroutine<T> get_return_object() { return Coroutine<T>(std::coroutine_handle<Promise>::from_promise(*this)); }
    template <class U>
    void return_value(U&& value) {
        value_.emplace(std::forward<U>(value));
    }
    T take_result() {
        if (error_) std::rethrow_exception(error_);
        return std::move(*value_);
    }

private:
    std::optional<T> value_;
};

template <>
class Promise<void> : public PromiseBase {
public:
    explicit Promise(FunctionName name = FunctionName(__builtin_FUNCTION())) : PromiseBase(name.name) {}
    Coroutine<void> get_return_object() { return Coroutine<void>(std::coroutine_handle<Promise>::from_promise(*this)); }
    void return_void() {}
    void take_result() {
        if (error_) std::rethrow_exception(error_);
    }
};

// The whole of one task: its future (with the typed result) and its driver, in one allocation.
template <class T>
class TaskState final : public FutureState<T>, public TaskBase {
public:
    TaskState(EventLoop& loop, Coroutine<T> body, std::string name)
        : FutureState<T>(loop),
          TaskBase(*this, body.frame_, body.frame_.promise(), std::move(name)),
          body_(std::move(body)) {
        this->is_task_ = true;
    }
    ~TaskState() override { release(); }
    bool cancel() override { return TaskBase::cancel(); }
    std::string to_string() const override { return describe(); }

private:
    void free_body(bool keep) override {
        if constexpr (!std::is_void_v<T>) {
            if (keep) this->value_ = std::make_unique<T>(body_.frame_.promise().take_result());
        }
        std::exchange(body_.frame_, {}).destroy();
    }
    Coroutine<T> body_;
};

}  // namespace detail

template <class T>
class Task : public Future<T> {
public:
    // cancel(), done(), result(), add_done_callback() and the rest come from Future; cancel() is
    // Task.cancel (see "Cancellation" above).
    int cancelling() const { return task().cancelling(); }
    int uncancel() { return task().uncancel(); }
    std::string name() const { return task().name(); }

private:
    // A task's result is what its coroutine returns: nobody else may set it (and its state refuses
    // set_result through a plain Future handle too).
    using Future<T>::set_result;
    using Future<T>::set_exception;
    friend class EventLoop;
    explicit Task(std::shared_ptr<detail::TaskState<T>> state) : Future<T>(std::move(state)) {}
    TaskBase& task() const { return static_cast<detail::TaskState<T>&>(*this->state_); }
};

template <class T>
Task<T> EventLoop::create_task(Coroutine<T> coroutine, std::string name) {
    if (!coroutine.frame_) throw std::invalid_argument("create_task: an empty Coroutine (moved from?)");
    auto state = std::make_shared<detail::TaskState<T>>(*this, std::move(coroutine), std::move(name));
    state->start(*this);
    return Task<T>(std::move(state));
}

template <class T>
T EventLoop::run_until_complete(Coroutine<T> coroutine) {
    Task<T> task = create_task(std::move(coroutine));
    return run_until_complete(static_cast<Future<T>>(std::move(task)));
}

}  // namespace sixways::coroutines
