// gather: run tasks concurrently and wait for all of them (asyncio.gather).
//
//   std::vector<Task<int>> children;
//   children.push_back(work(1));
//   children.push_back(work(2));
//   std::vector<int> results = co_await gather(loop, std::move(children));  // in the order given
//
//   std::vector<Outcome<int>> outcomes = co_await gather(loop, std::move(children), return_exceptions);
//   if (outcomes[1].ok()) use(outcomes[1].value()); else log(outcomes[1].error());
//
// Unstarted children are started (on `loop`); started ones are simply waited for.
//
// When a child fails. asyncio's gather passes the first exception on at once and leaves the other
// children running, owned by nobody in particular; Python's garbage collector tidies up after them.
// In C++ somebody must own a running task, and here that is the gather, whose frame holds the
// children. So this gather cancels the other children, waits until every one of them has finished
// (their sockets closed, their timers gone), and then throws the first failure. That is what
// asyncio's TaskGroup does, and it gives a simple rule: when a gather is done, so are its children.
// With return_exceptions nothing is cancelled: every child runs to its end, and each outcome, a
// value or an exception, is returned in order.
//
// Cancelling the gather cancels every child that is not done, waits for them all to finish, and
// then throws CancelledError.
#pragma once

#include <cstddef>
#include <exception>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "06_coroutines/event_loop.hpp"
#include "06_coroutines/task.hpp"

namespace sixways::coroutines {

// A value or the exception in its place (for a cancelled child, a CancelledError): the element of
// gather's result with return_exceptions. (std::expected would do, but g++ 12 has none.)
template <class T>
class Outcome {
public:
    explicit Outcome(T value) : value_(std::move(value)) {}
    explicit Outcome(std::exception_ptr error) : error_(std::move(error)) {}

    bool ok() const { return !error_; }
    // The value; rethrows the exception if there is one.
    const T& value() const {
        if (error_) std::rethrow_exception(error_);
        return *value_;
    }
    std::exception_ptr error() const { return error_; }

private:
    std::optional<T> value_;
    std::exception_ptr error_;
};

template <>
class Outcome<void> {
public:
    Outcome() = default;
    explicit Outcome(std::exception_ptr error) : error_(std::move(error)) {}

    bool ok() const { return !error_; }
    void value() const {
        if (error_) std::rethrow_exception(error_);
    }
    std::exception_ptr error() const { return error_; }

private:
    std::exception_ptr error_;
};

// The tag that selects the return_exceptions form: gather(loop, children, return_exceptions).
struct ReturnExceptions {};
inline constexpr ReturnExceptions return_exceptions{};

namespace detail {

// What a gather knows about its children while they run, shared with the done callbacks it puts
// on them (a child's callback may run after the gather's frame is gone, so this must not live in
// the frame).
struct GatherCount {
    explicit GatherCount(EventLoop& loop, std::size_t children) : wake_up(loop), remaining(children) {}
    Future<void> wake_up;  // completed when the gather has something to look at
    std::size_t remaining;
    bool fail_fast = true;             // wake the gather at the first failure, not only at the end
    std::exception_ptr first_failure;  // in the order the children finished
};

// Watches a gather's children. Lives in the gather's frame, next to the children it refers to.
// Its destructor takes its callbacks off the children still pending: otherwise a callback, which
// holds a handle to its child, would keep that child alive (and running) for ever.
template <class T>
class ChildWatch {
public:
    ChildWatch(EventLoop& loop, std::vector<Task<T>>& children)
        : loop_(loop), children_(children), count_(std::make_shared<GatherCount>(loop, children.size())) {
        callbacks_.reserve(children.size());
        for (Task<T>& child : children) {
            auto on_done = [count = count_, child = Future<T>(child)] { child_done(*count, child); };
            callbacks_.push_back(child.add_done_callback(std::move(on_done)));
        }
    }
    ~ChildWatch() {
        for (std::size_t i = 0; i < children_.size(); ++i) {
            if (!children_[i].done()) children_[i].remove_done_callback(callbacks_[i]);
        }
    }
    ChildWatch(const ChildWatch&) = delete;
    ChildWatch& operator=(const ChildWatch&) = delete;

    // A future to co_await: done when every child is done or, if fail_fast, one has failed.
    Future<void> wait(bool fail_fast) {
        GatherCount& count = *count_;
        count.fail_fast = fail_fast;
        if (count.wake_up.done()) count.wake_up = Future<void>(loop_);  // a fresh one for each wait
        if (count.remaining == 0 || (fail_fast && count.first_failure)) count.wake_up.set_result();
        return count.wake_up;
    }
    bool all_done() const { return count_->remaining == 0; }
    std::exception_ptr first_failure() const { return count_->first_failure; }

private:
    static void child_done(GatherCount& count, const Future<T>& child) {
        --count.remaining;
        const bool failed = child.cancelled() || child.exception() != nullptr;
        if (failed && !count.first_failure) {
            count.first_failure = child.cancelled() ? std::make_exception_ptr(CancelledError()) : child.exception();
        }
        const bool wake = count.remaining == 0 || (failed && count.fail_fast);
        if (wake && !count.wake_up.done()) count.wake_up.set_result();
    }

    EventLoop& loop_;
    std::vector<Task<T>>& children_;
    std::shared_ptr<GatherCount> count_;
    std::vector<CallbackId> callbacks_;
};

// Waits until every child is done. If `fail_fast`, cancels the others at the first failure (and
// still waits for them). Returns what the gather must throw: CancelledError if it was cancelled
// itself meanwhile, else (if fail_fast) the first failure, else nothing. Shared by every gather.
template <class T>
Task<std::exception_ptr> wait_for_children(EventLoop& loop, std::vector<Task<T>>& children, bool fail_fast);

}  // namespace detail

// The results of all children, in order. Throws the first failure (after cancelling and waiting
// for the others), or CancelledError if the gather is cancelled.
template <class T>
    requires(!std::is_void_v<T>)
Task<std::vector<T>> gather(EventLoop& loop, std::vector<Task<T>> children);

// The same for children without a result.
Task<void> gather(EventLoop& loop, std::vector<Task<void>> children);

// Every child runs to its end; its value or its exception, in order. Throws only CancelledError,
// if the gather itself is cancelled (its children are cancelled too, and waited for).
template <class T>
Task<std::vector<Outcome<T>>> gather(EventLoop& loop, std::vector<Task<T>> children, ReturnExceptions);

// ---- Implementation ----

namespace detail {

// `children` is a reference into the gather's frame. That is safe although this runs as a task of
// its own, because the gather co_awaits it at once: it cannot outlive the gather's frame (if that
// frame is destroyed, the only handle to this task goes with it). A coroutine spawned to run on its
// own, by contrast, must take its parameters by value.
template <class T>
Task<std::exception_ptr> wait_for_children(EventLoop& loop, std::vector<Task<T>>& children, bool fail_fast) {
    for (Task<T>& child : children) ensure_started(loop, child);
    ChildWatch<T> watch(loop, children);
    bool cancelled = false;
    // C++ forbids co_await inside a catch handler; hence the flag, and the waits outside them.
    try {
        co_await watch.wait(fail_fast);
    } catch (const CancelledError&) {
        cancelled = true;  // the gather was cancelled: cancel the children below
    }
    if (!watch.all_done()) {
        // A child failed (fail_fast) or the gather was cancelled: cancel the rest, and wait until
        // every one has finished. Another cancel() of the gather during this wait changes nothing.
        for (Task<T>& child : children) child.cancel();
        while (!watch.all_done()) {
            try {
                co_await watch.wait(false);
            } catch (const CancelledError&) {
                cancelled = true;
            }
        }
    }
    if (cancelled) co_return std::make_exception_ptr(CancelledError());
    co_return fail_fast ? watch.first_failure() : nullptr;
}

}  // namespace detail

template <class T>
    requires(!std::is_void_v<T>)
Task<std::vector<T>> gather(EventLoop& loop, std::vector<Task<T>> children) {
    const std::exception_ptr failure = co_await detail::wait_for_children(loop, children, true);
    if (failure) std::rethrow_exception(failure);
    std::vector<T> results;
    results.reserve(children.size());
    for (Task<T>& child : children) {
        results.push_back(co_await std::move(child));  // done: no suspension; the value is moved out
    }
    co_return results;
}

template <class T>
Task<std::vector<Outcome<T>>> gather(EventLoop& loop, std::vector<Task<T>> children, ReturnExceptions) {
    const std::exception_ptr failure = co_await detail::wait_for_children(loop, children, false);
    if (failure) std::rethrow_exception(failure);  // only CancelledError: the gather was cancelled
    std::vector<Outcome<T>> outcomes;
    outcomes.reserve(children.size());
    for (Task<T>& child : children) {
        if (child.cancelled()) {
            outcomes.emplace_back(std::make_exception_ptr(CancelledError()));
        } else if (std::exception_ptr error = child.exception()) {
            outcomes.emplace_back(std::move(error));
        } else if constexpr (std::is_void_v<T>) {
            outcomes.emplace_back();
        } else {
            outcomes.emplace_back(co_await std::move(child));  // done: moves the value out
        }
    }
    co_return outcomes;
}

}  // namespace sixways::coroutines
