// Generator<Yield, Sent>: a Python-style generator on C++20 coroutines, written out in full.
//
// g++ 12 has no std::generator, and even C++23's cannot receive a value back from co_yield, the
// very thing this stage needs. So we write our own, and it is short enough to read in one sitting:
//
//     Generator<int> count_to(int n) {            // a coroutine: its body contains co_yield
//         for (int i = 1; i <= n; ++i) co_yield i;
//     }
//     for (int i : count_to(3)) ...               // 1, 2, 3
//
//     Generator<std::string, int> ask() {
//         int answer = co_yield "how many?";      // hands the question out, gets the answer back
//         ...
//     }
//     auto g = ask();
//     g.next();                                   // runs to the first co_yield
//     g.current();                                // "how many?"
//     g.send(42);                                 // co_yield evaluates to 42; runs to the next
//
// The same four moves as Python's generators: create (nothing runs), next(), send(v), close().
//
// ---- What the compiler does with a coroutine ----
// A function whose body contains co_yield (or co_await, or co_return) is a coroutine. The
// compiler turns its body into roughly this (Lewis Baker's "Understanding the promise type" draws
// it in full):
//
//     Generator<int> count_to(int n) {
//         frame = new Frame{n};                     // heap: parameters, locals, the promise, and
//                                                   //   where the body is suspended
//         Generator<int> g = frame->promise.get_return_object();
//         co_await frame->promise.initial_suspend();  // we return suspend_always: stop right here
//         try {
//             ... the body; each `co_yield v` becomes `co_await frame->promise.yield_value(v)` ...
//         } catch (...) {
//             frame->promise.unhandled_exception();
//         }
//         co_await frame->promise.final_suspend();  // suspend_always again: keep the frame
//     }
//
// and the call `count_to(3)` runs only up to the first suspension, then returns `g`. So:
// - The frame lives on the heap, not on the stack: the locals survive while the body is suspended,
//   and the caller's stack is free to do other things (run another generator, call epoll_wait). It
//   is allocated once, when the coroutine is called, and freed when someone calls handle.destroy();
//   here that someone is the Generator object, in its destructor or in close().
// - The promise (promise_type below, our code) is the object in the frame through which the body
//   and its caller talk: the yielded value goes out through it, the sent value comes in through it.
// - The coroutine_handle is a pointer to the frame. handle.resume() continues the body where it is
//   suspended and returns when the body suspends again (at the next co_yield, or at the end).
//
// ---- Who resumes whom ----
// Only the owner of the Generator: next() and send() call handle.resume(), and the body runs on the
// caller's stack until its next co_yield, which returns control to the same caller. Nothing else
// ever resumes a generator; that is what makes it a generator rather than a task. It is also why
// co_await is forbidden inside one (see await_transform below).
#pragma once

#include <coroutine>
#include <exception>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <utility>
#include <variant>

namespace sixways::generators {

// Sent defaults to std::monostate, the empty type: a generator that is only iterated receives
// nothing from its co_yield expressions.
template <typename Yield, typename Sent = std::monostate>
class Generator {
public:
    struct promise_type;
    using Handle = std::coroutine_handle<promise_type>;

    // The part of the frame that we write. The compiler calls these members; we never do.
    struct promise_type {
        std::optional<Yield> current;  // the value of the latest co_yield (optional: Yield need
                                       // not be default-constructible)
        Sent sent{};                   // what send() passed in, for the co_yield to return
        std::exception_ptr exception;  // what escaped the body, for next()/send() to rethrow

        // The caller's handle to this frame: the Generator object the call returns.
        Generator get_return_object() { return Generator{Handle::from_promise(*this)}; }

        // Lazy start: the call only creates the frame; the body runs at the first next().
        std::suspend_always initial_suspend() noexcept { return {}; }

        // Stop at the end instead of freeing the frame ourselves: the Generator can still ask
        // done() (a freed frame could not answer), and it alone destroys the frame, exactly once.
        std::suspend_always final_suspend() noexcept { return {}; }

        // `co_yield value` is `co_await promise.yield_value(value)`. We store the value where the
        // caller can read it, then suspend; when the caller resumes us, await_resume() is the value
        // of the whole co_yield expression: the value the caller sent.
        struct YieldAwaiter {
            promise_type& promise;
            bool await_ready() const noexcept { return false; }           // always suspend
            void await_suspend(std::coroutine_handle<>) const noexcept {}  // back to the resumer
            Sent await_resume() const { return std::move(promise.sent); }
        };
        YieldAwaiter yield_value(Yield value) {
            current = std::move(value);
            return YieldAwaiter{*this};
        }

        void return_void() noexcept {}

        // The body threw: keep the exception, and the body goes to final_suspend. resume() returns
        // normally, and next()/send() rethrow it to their caller, as Python's next() does.
        void unhandled_exception() noexcept { exception = std::current_exception(); }

        // No co_await inside a generator. `co_await x` in the body first calls
        // promise.await_transform(x); deleting it makes every co_await a compile error. Why forbid
        // it: an awaited operation would take our handle and resume the body later, from wherever
        // it completes. The caller's resume() would then return without a co_yield, with nothing in
        // current(), while someone else holds the right to continue the body. A generator has one
        // resumer, its owner. Coroutines that wait on other things, and go on when those are done,
        // run in tasks: that is stage 06. (co_yield is not affected: the standard does
        // not pass yield_value's result through await_transform.)
        template <typename Anything>
        void await_transform(Anything&&) = delete;
    };

    Generator() = default;  // empty: done(), owns no frame
    Generator(Generator&& other) noexcept
        : handle_(std::exchange(other.handle_, nullptr)),
          started_(std::exchange(other.started_, false)) {}
    Generator& operator=(Generator&& other) noexcept {
        if (this != &other) {
            close();
            handle_ = std::exchange(other.handle_, nullptr);
            started_ = std::exchange(other.started_, false);
        }
        return *this;
    }
    // Move-only: two owners of one frame would both destroy it.
    Generator(const Generator&) = delete;
    Generator& operator=(const Generator&) = delete;
    ~Generator() { close(); }

    // Resumes the body with nothing to send (the co_yield evaluates to Sent{}). The first call
    // starts the body. Returns true when the body stopped at a co_yield (its value is current()),
    // false when it finished. Rethrows an exception that escaped the body (the generator is then
    // done). Throws std::logic_error on a finished or empty generator, as resuming a coroutine
    // stopped at its final suspend point is undefined.
    bool next() { return resume(Sent{}); }

    // Resumes the body and makes the co_yield it is suspended at evaluate to `value` (Python's
    // send). Otherwise as next(). Throws std::logic_error before the first next(): the body has not
    // reached a co_yield yet, so nothing would receive the value (Python raises TypeError).
    bool send(Sent value) {
        if (!started_) {
            throw std::logic_error("send() to a generator that has not started: call next() first");
        }
        return resume(std::move(value));
    }

    // The value of the co_yield the body is suspended at. Only while !done() and after next().
    const Yield& current() const { return *handle_.promise().current; }

    // True when the body has finished (returned or thrown), or when there is no body (the
    // generator was moved from or closed).
    bool done() const { return !handle_ || handle_.done(); }

    // Destroys the frame now. The destructors of the locals that are alive at the suspension point
    // run, in reverse order, as if the body had left its scopes there: a socket held by an RAII
    // object is closed. No other code of the body runs (Python's close() throws GeneratorExit into
    // the body instead; C++ has no such thing). Safe to call on a finished or empty generator.
    void close() {
        if (handle_) std::exchange(handle_, nullptr).destroy();
    }

    // Range-for support, for generators that are only iterated: `for (auto& v : gen())`.
    // begin() starts the body; ++ calls next(); the loop ends when the body finishes.
    class iterator {
    public:
        explicit iterator(Generator* generator) : generator_(generator) {}
        const Yield& operator*() const { return generator_->current(); }
        iterator& operator++() {
            generator_->next();
            return *this;
        }
        void operator++(int) { ++*this; }
        friend bool operator==(const iterator& it, std::default_sentinel_t) {
            return it.generator_->done();
        }

    private:
        Generator* generator_ = nullptr;
    };
    iterator begin() {
        next();
        return iterator{this};
    }
    std::default_sentinel_t end() const { return {}; }

private:
    explicit Generator(Handle handle) : handle_(handle) {}

    bool resume(Sent value) {
        if (done()) throw std::logic_error("resume of a finished generator");
        started_ = true;
        promise_type& promise = handle_.promise();
        promise.sent = std::move(value);
        handle_.resume();  // runs the body until its next co_yield or its end
        if (promise.exception) std::rethrow_exception(std::exchange(promise.exception, nullptr));
        return !handle_.done();
    }

    Handle handle_;
    bool started_ = false;
};

}  // namespace sixways::generators
