// Chapter 05's hook tracer: a generator whose promise and awaiter print each call the compiler
// makes, to watch the protocol run before reading tiny.cpp's Generator, which has the same hooks.
#include <coroutine>
#include <cstdio>
#include <utility>

struct Traced {
    struct promise_type {
        int sent = 0;  // what main leaves here before a resume, for the co_yield to evaluate to

        Traced get_return_object() {
            std::puts("  get_return_object");
            return Traced(std::coroutine_handle<promise_type>::from_promise(*this));
        }
        std::suspend_always initial_suspend() noexcept { std::puts("  initial_suspend"); return {}; }
        std::suspend_always final_suspend() noexcept { std::puts("  final_suspend"); return {}; }
        void return_void() { std::puts("  return_void"); }
        void unhandled_exception() { throw; }

        struct YieldAwaiter {
            promise_type& promise;
            bool await_ready() const noexcept { std::puts("  await_ready"); return false; }
            void await_suspend(std::coroutine_handle<>) const noexcept { std::puts("  await_suspend"); }
            int await_resume() const { std::puts("  await_resume"); return promise.sent; }
        };
        YieldAwaiter yield_value(int value) {
            std::printf("  yield_value(%d)\n", value);
            return YieldAwaiter{*this};
        }
    };

    explicit Traced(std::coroutine_handle<promise_type> frame) : handle(frame) {}
    Traced(Traced&& other) noexcept : handle(std::exchange(other.handle, {})) {}
    ~Traced() { if (handle) handle.destroy(); }

    std::coroutine_handle<promise_type> handle;
};

Traced body() {
    std::puts("  body starts");
    const int got = co_yield 1;
    std::printf("  body: co_yield evaluated to %d\n", got);
}

int main() {
    std::puts("call body()");
    Traced traced = body();
    std::puts("resume()");
    traced.handle.resume();
    std::puts("sent = 40, resume()");
    traced.handle.promise().sent = 40;
    traced.handle.resume();
    std::printf("done() is %s\n", traced.handle.done() ? "true" : "false");
}
