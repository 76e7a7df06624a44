// A Future: a result that is not there yet (asyncio: futures.Future).
//
// In the 500 Lines crawler, a Future is about twenty lines: a result, a list of callbacks, and
// set_result, which calls them. This one adds what a real program needs: an exception instead of a
// result, cancellation, and its callbacks run by the loop on a later turn, never inside
// set_result (a callback that ran inside set_result would run in the middle of whatever code
// called set_result, with that code's half-done state, and could call set_result again).
//
//   Future<int> future(loop);
//   future.add_done_callback([] { ... });  // called on a later turn of the loop
//   future.set_result(42);                 // or set_exception(...), or cancel()
//   future.done();                         // true
//   future.result();                       // 42; rethrows the exception; CancelledError if cancelled
//   int x = co_await future;               // inside a Task: waits without blocking the loop
//
// A Future is a handle to a shared state: copies of a Future are the same future, and the state
// lives as long as any copy, or any task waiting on it, holds it. That is what lets a future be
// held by several parties at once: the code that will set it (a timer's callback, a Queue's list
// of waiters) and the task waiting for it. Each keeps its own handle and none has to outlive
// the others. (asyncio gets the same from Python's references.) A moved-from Future is empty.
//
// How a task waits on a future with co_await is in task.hpp: a Future itself knows nothing of
// coroutines.
#pragma once

#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "06_coroutines/event_loop.hpp"

namespace sixways::coroutines {

// Thrown from a co_await (and by result()) when what was awaited was cancelled. Like asyncio's
// CancelledError since Python 3.8, it deliberately does not derive from std::exception: a
// `catch (const std::exception&)` meant for I/O errors must not swallow a cancellation by accident.
// Catch it by name, clean up, and (almost always) throw it on.
class CancelledError {
public:
    const char* what() const noexcept { return "cancelled"; }
};

// A call that the future's state does not allow: result() before it is done, set_result() twice.
class InvalidStateError : public std::logic_error {
public:
    using std::logic_error::logic_error;
};

// Names a done callback, for remove_done_callback.
using CallbackId = std::uint64_t;

namespace detail {

class TaskBase;
class TaskPromiseBase;

// The state that all copies of one Future share, apart from the typed result.
class FutureState {
public:
    explicit FutureState(EventLoop* loop) : loop_(loop) {}
    virtual ~FutureState() = default;
    FutureState(const FutureState&) = delete;
    FutureState& operator=(const FutureState&) = delete;

    bool done() const { return status_ != Status::pending; }
    bool cancelled() const { return status_ == Status::cancelled; }
    bool succeeded() const { return status_ == Status::finished && !exception_; }
    std::exception_ptr exception() const;
    void set_exception(std::exception_ptr error);
    virtual bool cancel();
    CallbackId add_done_callback(Callback callback);
    bool remove_done_callback(CallbackId id);
    virtual std::string to_string() const { return "<Future " + details() + ">"; }
    EventLoop* loop() const { return loop_; }
    // The task whose future this is, if it is a task's (task.hpp); null for a plain Future.
    virtual TaskBase* task() { return nullptr; }

protected:
    friend class TaskBase;
    enum class Status { pending, finished, cancelled };

    void require_pending(const char* call) const;
    void check_result() const;  // throws unless the future finished with a result
    // Marks the future done and schedules everything waiting on it for the next turn.
    void finish(Status status, std::exception_ptr error = nullptr);
    // "pending", "cancelled", "finished exception=..."; ValueState adds "result=...".
    virtual std::string details() const;

    EventLoop* loop_;  // a task's state gets its loop when the task is started

private:
    Status status_ = Status::pending;
    std::exception_ptr exception_;
    // Tasks suspended in `co_await` on this future, first come first served. The links live in
    // the tasks themselves (a task waits on one future at a time), so waiting allocates nothing.
    TaskBase* first_waiter_ = nullptr;
    TaskBase* last_waiter_ = nullptr;
    std::vector<std::pair<CallbackId, Callback>> callbacks_;
    CallbackId next_callback_id_ = 0;

    void add_waiter(TaskBase& task);
    void remove_waiter(TaskBase& task);
};

// Prints a result if it can be printed.
template <class T>
concept Printable = requires(std::ostream& out, const T& value) { out << value; };

template <class T>
class ValueState : public FutureState {
public:
    using FutureState::FutureState;

    void set_result(T value) {
        require_pending("set_result");
        value_.emplace(std::move(value));
        finish(Status::finished);
    }
    const T& result() const {
        check_result();
        return *value_;
    }
    // For the last holder of a future only: nobody can read the result after this.
    T take_result() {
        check_result();
        return std::move(*value_);
    }

protected:
    std::string details() const override {
        if (!done() || cancelled() || exception() || !Printable<T>) return FutureState::details();
        std::ostringstream text;
        if constexpr (Printable<T>) text << "finished result=" << *value_;
        return text.str();
    }
    std::optional<T> value_;  // a task stores its coroutine's co_return value here
};

// The result for whoever asked: a copy if other handles to the future exist (they may read it
// too), moved out if `state` is the last one (nobody can read it after us, and a body of megabytes
// is moved, not copied). A move-only result is always moved out: read it once.
template <class T>
T copy_or_take_result(const std::shared_ptr<ValueState<T>>& state) {
    if constexpr (std::is_copy_constructible_v<T>) {
        if (state.use_count() > 1) return state->result();
    }
    return state->take_result();
}

template <>
class ValueState<void> : public FutureState {
public:
    using FutureState::FutureState;

    void set_result() {
        require_pending("set_result");
        finish(Status::finished);
    }
    void result() const { check_result(); }
    void take_result() { check_result(); }
};

// Everything a Future offers, whatever its T; Future<T> and Future<void> add the typed result.
template <class T>
class BasicFuture {
public:
    bool done() const { return state_->done(); }
    bool cancelled() const { return state_->cancelled(); }

    // The exception the future finished with, or null if it finished with a result.
    // Throws CancelledError if it was cancelled, InvalidStateError if it is not done.
    std::exception_ptr exception() const { return state_->exception(); }

    // Throws InvalidStateError if the future is already done.
    void set_exception(std::exception_ptr error) { state_->set_exception(std::move(error)); }
    template <class E>
    void set_exception(E error) {
        state_->set_exception(std::make_exception_ptr(std::move(error)));
    }

    // Cancels a pending future: it is done, cancelled() is true, and result() and co_await throw
    // CancelledError. Returns false (and changes nothing) if it was already done. For a Task, see
    // Task::cancel in task.hpp.
    bool cancel() { return state_->cancel(); }

    // Calls `callback` on a later turn once the future is done; if it is done already, on the next
    // turn. Never inside this call, never inside set_result. (asyncio passes the future to the
    // callback; here it takes nothing, and captures what it needs.) A callback that holds a copy of
    // the future keeps it alive until it is done or the callback is removed.
    CallbackId add_done_callback(Callback callback) { return state_->add_done_callback(std::move(callback)); }
    // Returns false if the callback was already scheduled (the future is done) or removed.
    bool remove_done_callback(CallbackId id) { return state_->remove_done_callback(id); }

    // "<Future pending>", "<Future finished result=42>", "<Task pending name=Task-1 wait_for=...>"
    std::string to_string() const { return state_->to_string(); }
    friend std::ostream& operator<<(std::ostream& out, const BasicFuture& future) {
        return out << future.to_string();
    }

    EventLoop& loop() const { return *state_->loop(); }

    // True when two handles name the same future.
    friend bool operator==(const BasicFuture& a, const BasicFuture& b) { return a.state_ == b.state_; }

protected:
    friend class TaskPromiseBase;  // co_await reaches the state
    friend class sixways::coroutines::EventLoop;  // so does run_until_complete
    explicit BasicFuture(std::shared_ptr<ValueState<T>> state) : state_(std::move(state)) {}
    std::shared_ptr<ValueState<T>> state_;
};

}  // namespace detail

template <class T>
class Future : public detail::BasicFuture<T> {
public:
    explicit Future(EventLoop& loop) : detail::BasicFuture<T>(std::make_shared<detail::ValueState<T>>(&loop)) {}

    // The result. Rethrows the exception the future finished with; throws CancelledError if it was
    // cancelled, InvalidStateError if it is not done yet.
    const T& result() const { return this->state_->result(); }
    // Throws InvalidStateError if the future is already done (set twice, or cancelled meanwhile).
    void set_result(T value) { this->state_->set_result(std::move(value)); }

protected:
    explicit Future(std::shared_ptr<detail::ValueState<T>> state) : detail::BasicFuture<T>(std::move(state)) {}
};

template <>
class Future<void> : public detail::BasicFuture<void> {
public:
    explicit Future(EventLoop& loop) : detail::BasicFuture<void>(std::make_shared<detail::ValueState<void>>(&loop)) {}

    // Returns if the future finished without an exception; otherwise as Future<T>::result.
    void result() const { state_->result(); }
    void set_result() { state_->set_result(); }

protected:
    explicit Future(std::shared_ptr<detail::ValueState<void>> state) : detail::BasicFuture<void>(std::move(state)) {}
};

// Defined here rather than in event_loop.cpp because it is a template; declared in event_loop.hpp.
// asyncio's run_until_complete does the same: a done callback stops the loop.
template <class T>
T EventLoop::run_until_complete(Future<T> future) {
    const CallbackId id = future.add_done_callback([this] { stop(); });
    try {
        run_forever();
    } catch (...) {
        future.remove_done_callback(id);
        throw;
    }
    if (!future.done()) {
        future.remove_done_callback(id);
        throw std::logic_error("run_until_complete: the loop was stopped before the future was done");
    }
    if constexpr (std::is_void_v<T>) {
        future.result();
    } else {
        return detail::copy_or_take_result(future.state_);
    }
}

}  // namespace sixways::coroutines
