// A Future: a result that is not there yet (asyncio: futures.Future).
//
// tiny.cpp's Future is a result and a list of callbacks, and a task waiting on it is one of those
// callbacks. This one adds what a real program needs:
//   - an exception instead of a result, and cancellation;
//   - a list of the tasks waiting on it, apart from the callbacks. A waiting task is linked into
//     the list through a pointer in the task itself, so waiting allocates nothing (it happens for
//     every socket wait), and a task that is destroyed while it waits can take itself off it.
// Its callbacks and waiters are queued, never run inside set_result: a callback that ran inside
// set_result would run in the middle of whatever code called it. They run the next time the loop
// runs its ready queue: the next turn, or this one when a socket wait completes the future while
// the turn is still collecting events (event_loop.cpp, run_once).
//
// A Future is not an awaiter itself, as tiny.cpp's is: what `co_await future` does depends on the
// task that waits, so task.hpp's promise turns the future into an awaiter (await_transform).
//
//   Future<int> future(loop);
//   future.add_done_callback([] { ... });  // queued once it is done, never called inline
//   future.set_result(42);                 // or set_exception(...), or cancel()
//   future.result();                       // 42; rethrows the exception; CancelledError if cancelled
//   int x = co_await future;               // in a coroutine: waits without blocking the loop
//
// A Future is a handle to a shared state: copies are the same future, which lives as long as any
// copy does. So the code that will complete it (a timer, a socket's reader) and the task waiting
// for it each hold a handle, and neither has to outlive the other.
#pragma once

#include <exception>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "06_coroutines/event_loop.hpp"

namespace sixways::coroutines {

// Thrown from a co_await (and by result()) when what was awaited was cancelled. Like asyncio's
// since Python 3.8, it deliberately does not derive from std::exception: a
// `catch (const std::exception&)` meant for I/O errors must not swallow a cancellation.
// Catch it by name, clean up, and (almost always) throw it on.
class CancelledError {
public:
    const char* what() const noexcept { return "cancelled"; }
};

// A call the future's state does not allow: result() before it is done, set_result() twice.
class InvalidStateError : public std::logic_error {
public:
    using std::logic_error::logic_error;
};

namespace detail {

// The state all copies of a Future share, apart from the value. future.cpp.
class FutureBase {
public:
    explicit FutureBase(EventLoop& loop) : loop_(loop) {}
    virtual ~FutureBase() = default;
    FutureBase(const FutureBase&) = delete;
    FutureBase& operator=(const FutureBase&) = delete;

    bool done() const { return status_ != Status::pending; }
    bool cancelled() const { return status_ == Status::cancelled; }
    std::exception_ptr exception() const;  // null if it finished with a result
    void set_exception(std::exception_ptr error);
    // Returns false (and changes nothing) if done already. A Task and a socket wait add to it.
    virtual bool cancel();
    void add_done_callback(Callback callback);
    EventLoop& loop() const { return loop_; }
    // "<Future pending>", "<Future finished exception=...>"; a Task says more.
    virtual std::string to_string() const;

    // A task suspended in co_await on this future (task.cpp); its step is scheduled when it is done.
    void add_waiter(TaskBase& task);
    void remove_waiter(TaskBase& task);

protected:
    friend class sixways::coroutines::TaskBase;  // a task finishes its own future
    enum class Status { pending, finished, cancelled };
    // Throws InvalidStateError if done, or if this is a task's future (asyncio: Task.set_result
    // raises): a task's result is what its coroutine returns, whichever handle is asked.
    void require_settable(const char* call) const;
    bool is_task_ = false;
    void check_result() const;  // throws unless it finished with a result
    // Marks the future done and queues its waiters' steps and its callbacks on the ready queue.
    void finish(Status status, std::exception_ptr error = nullptr);
    std::string state_name() const;

private:
    EventLoop& loop_;
    Status status_ = Status::pending;
    std::exception_ptr exception_;
    // Tasks waiting on this future, first come first served. The links live in the tasks (a task
    // waits on one future at a time), so waiting allocates nothing.
    TaskBase* first_waiter_ = nullptr;
    TaskBase* last_waiter_ = nullptr;
    std::vector<Callback> callbacks_;
};

template <class T>
class FutureState : public FutureBase {
public:
    using FutureBase::FutureBase;
    void set_result(T value) {
        require_settable("set_result");
        value_ = std::make_unique<T>(std::move(value));
        finish(Status::finished);
    }
    const T& result() const {
        check_result();
        check_not_taken();
        return *value_;
    }
    T take_result() {  // for the last holder, or the first taker of a result that cannot be copied
        check_result();
        check_not_taken();
        taken_ = true;
        return std::move(*value_);
    }

protected:
    // On the heap, and only once there is a result: a pending future (a task whose fetch is still
    // under way) keeps 8 bytes for it, not the size of a Result.
    std::unique_ptr<T> value_;

private:
    void check_not_taken() const {
        if (taken_) throw InvalidStateError("result(): a result that cannot be copied was taken already");
    }
    bool taken_ = false;
};

template <>
class FutureState<void> : public FutureBase {
public:
    using FutureBase::FutureBase;
    void set_result() {
        require_settable("set_result");
        finish(Status::finished);
    }
    void result() const { check_result(); }
    void take_result() { check_result(); }
};

// The result for whoever asked: moved out when `state` is the last handle (nobody can read it after
// us, and a body of megabytes is moved, not copied), copied otherwise. A result that cannot be
// copied (a std::unique_ptr) is moved out to the first taker, and a second taker (co_await,
// result(), run_until_complete) gets InvalidStateError, never a moved-from value.
template <class T>
T take_or_copy(const std::shared_ptr<FutureState<T>>& state) {
    if constexpr (std::is_copy_constructible_v<T>) {
        if (state.use_count() > 1) return state->result();
    }
    return state->take_result();
}

class PromiseBase;

}  // namespace detail

template <class T>
class Future {
public:
    explicit Future(EventLoop& loop) : state_(std::make_shared<detail::FutureState<T>>(loop)) {}
    // A future whose state does more than hold a result (a socket wait, socket.cpp).
    explicit Future(std::shared_ptr<detail::FutureState<T>> state) : state_(std::move(state)) {}

    bool done() const { return state_->done(); }
    bool cancelled() const { return state_->cancelled(); }
    // The result; rethrows the exception it finished with; throws CancelledError if it was
    // cancelled, InvalidStateError if it is not done. (const T&, or void for a Future<void>.)
    // Every co_await gets a copy, but a result that cannot be copied goes to the first co_await
    // (moved out); after that, result() and co_await throw InvalidStateError.
    decltype(auto) result() const { return state_->result(); }
    // The exception, or null if it finished with a result. Throws as result() does if not done or
    // cancelled.
    std::exception_ptr exception() const { return state_->exception(); }

    // set_result(value), or set_result() for a Future<void>. Throws InvalidStateError if done.
    template <class... Value>
    void set_result(Value&&... value) {
        state_->set_result(std::forward<Value>(value)...);
    }
    void set_exception(std::exception_ptr error) { state_->set_exception(std::move(error)); }
    // Makes it done and cancelled: result() and co_await throw CancelledError. False if done
    // already. For a Task: see Task::cancel.
    bool cancel() { return state_->cancel(); }

    // Queues `callback` on the ready queue once the future is done (at once if it is done
    // already). A callback holding a copy of the future keeps it alive until it has run.
    void add_done_callback(Callback callback) { state_->add_done_callback(std::move(callback)); }

    EventLoop& loop() const { return state_->loop(); }
    std::string to_string() const { return state_->to_string(); }
    friend std::ostream& operator<<(std::ostream& out, const Future& future) { return out << future.to_string(); }
    friend bool operator==(const Future& a, const Future& b) { return a.state_ == b.state_; }  // the same future

protected:
    friend class detail::PromiseBase;  // co_await reaches the state
    friend class EventLoop;            // so does run_until_complete
    std::shared_ptr<detail::FutureState<T>> state_;
};

// Runs turns until the future is done. A nested call is refused before anything changes.
template <class T>
T EventLoop::run_until_complete(Future<T> future) {
    run(future.state_.get());
    if (!future.done()) throw std::logic_error("run_until_complete: the loop was stopped before the future was done");
    return detail::take_or_copy(future.state_);
}

}  // namespace sixways::coroutines
