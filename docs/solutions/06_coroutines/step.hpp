// Chapter 06, part 2, exercise 1, one answer: a task that runs a stack of coroutine frames, as
// stage 06's Task does, and nothing else: no loop, no Futures, no sockets. A coroutine awaits
// another coroutine, or `pause`, which stands in for a pending Future: the task's step ends there,
// and whoever owns the task steps it again later (in stage 06, the loop does).
// step_test.cpp checks it; step_start.hpp is the same file with CoroutineAwaiter and the step loop
// left for you to write.
#pragma once

#include <coroutine>
#include <cstddef>
#include <exception>
#include <optional>
#include <utility>
#include <vector>

namespace step {

class TaskBase;

// What every frame's promise shares, so that the task's stack can hold frames of any type.
struct PromiseBase {
    TaskBase* task = nullptr;  // the task this frame runs in, for the awaiters of its co_awaits
    std::exception_ptr error;  // the exception that left the coroutine, if one did
    void unhandled_exception() { error = std::current_exception(); }
};

class TaskBase {
public:
    // Resumes the frame on top until the task waits (at a pause) or its stack is empty.
    void step() {
        waiting_ = false;
        while (!frames_.empty()) {
            const Frame top = frames_.back();
            top.handle.resume();  // runs until its next co_await that suspends, or to its end
            if (top.handle.done()) {
                frames_.pop_back();  // its parent, on top now, takes the result in await_resume
            } else if (waiting_) {
                return;  // paused: the next step resumes it
            }
            // Otherwise it pushed the coroutine it awaits, which the loop resumes next.
        }
    }
    bool done() const { return frames_.empty(); }
    std::size_t frames() const { return frames_.size(); }

    void push(std::coroutine_handle<> handle, PromiseBase& promise) {
        promise.task = this;
        frames_.push_back({handle, &promise});
    }
    void wait() { waiting_ = true; }

protected:
    TaskBase() = default;
    TaskBase(const TaskBase&) = delete;  // every frame's promise points at it
    TaskBase& operator=(const TaskBase&) = delete;
    ~TaskBase() = default;

private:
    struct Frame {
        std::coroutine_handle<> handle;
        PromiseBase* promise;
    };
    std::vector<Frame> frames_;  // the bottom frame first, the running one last
    bool waiting_ = false;
};

template <class T>
class Coroutine;

template <class T>
class CoroutineAwaiter;

// `co_await pause;` ends the task's step; the next step resumes the coroutine after it.
struct Pause {};
inline constexpr Pause pause{};

struct PauseAwaiter {
    TaskBase& task;
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<>) { task.wait(); }
    void await_resume() const noexcept {}
};

template <class T>
struct Promise : PromiseBase {
    std::optional<T> value;

    Coroutine<T> get_return_object() { return Coroutine<T>(std::coroutine_handle<Promise>::from_promise(*this)); }
    std::suspend_always initial_suspend() noexcept { return {}; }  // the task, or the awaiter, resumes it
    std::suspend_always final_suspend() noexcept { return {}; }    // kept for its result; its owner destroys it
    void return_value(T result) { value = std::move(result); }

    // The co_return value, or the exception that left the coroutine, rethrown.
    T take_result() {
        if (error) std::rethrow_exception(error);
        return std::move(*value);
    }

    // The only things a coroutine here can co_await: another coroutine, and `pause`.
    template <class U>
    CoroutineAwaiter<U> await_transform(Coroutine<U>&& child) {
        return CoroutineAwaiter<U>(std::move(child), *task);
    }
    PauseAwaiter await_transform(Pause) { return PauseAwaiter{*task}; }
};

// Owns one frame. Calling a coroutine function makes one, suspended before its first line.
template <class T>
class Coroutine {
public:
    using promise_type = Promise<T>;

    explicit Coroutine(std::coroutine_handle<Promise<T>> frame) : frame_(frame) {}
    Coroutine(Coroutine&& other) noexcept : frame_(std::exchange(other.frame_, nullptr)) {}
    Coroutine& operator=(Coroutine&&) = delete;
    ~Coroutine() {
        if (frame_) frame_.destroy();
    }

private:
    template <class>
    friend class CoroutineAwaiter;
    template <class>
    friend class Task;
    std::coroutine_handle<Promise<T>> frame_;
};

// What `co_await child` does: push the child on the task's stack; the step resumes it next, and
// resumes the awaiting frame again once the child has finished. The awaiter owns the child's frame.
template <class T>
class CoroutineAwaiter {
public:
    CoroutineAwaiter(Coroutine<T> child, TaskBase& task) : child_(std::move(child)), task_(task) {}
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<>) { task_.push(child_.frame_, child_.frame_.promise()); }
    T await_resume() { return child_.frame_.promise().take_result(); }

private:
    Coroutine<T> child_;
    TaskBase& task_;
};

// A task made with its bottom coroutine; step() runs it, result() gives what it co_returned.
template <class T>
class Task : public TaskBase {
public:
    explicit Task(Coroutine<T> body) : body_(std::move(body)) { push(body_.frame_, body_.frame_.promise()); }
    T result() { return body_.frame_.promise().take_result(); }

private:
    Coroutine<T> body_;
};

}  // namespace step
