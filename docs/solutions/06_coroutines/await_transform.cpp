// Chapter 06, part 2: await_transform alone, with no loop. Every `co_await x` in a coroutine whose
// promise has await_transform becomes `co_await promise.await_transform(x)`: the promise sees what
// is awaited first, and may hand the awaiter what only it knows. Run: build/bin/solution_06_await_transform
#include <coroutine>
#include <cstdio>

// A ready-made awaiter: never suspends, and the co_await's value is `value`.
struct Ready {
    int value;
    bool await_ready() const noexcept { return true; }
    void await_suspend(std::coroutine_handle<>) const noexcept {}
    int await_resume() const noexcept { return value; }
};

struct Job {
    struct promise_type {
        const char* runner = "nobody";  // who runs this frame: the promise knows, an int does not
        Ready await_transform(int x) {
            std::printf("%s awaits %d\n", runner, x);
            return Ready{x * 10};
        }
        Job get_return_object() { return Job{std::coroutine_handle<promise_type>::from_promise(*this)}; }
        std::suspend_always initial_suspend() noexcept { return {}; }
        std::suspend_always final_suspend() noexcept { return {}; }
        void return_void() {}
        void unhandled_exception() { throw; }
    };
    std::coroutine_handle<promise_type> handle;
};

Job count() {
    const int a = co_await 1;  // an int is no awaiter: await_transform makes one
    const int b = co_await 2;
    std::printf("got %d and %d\n", a, b);
}

int main() {
    Job job = count();                       // suspended before its first line
    job.handle.promise().runner = "task A";  // as a Task fills in its promise
    job.handle.resume();                     // runs to the end: no co_await here suspends
    job.handle.destroy();
}
