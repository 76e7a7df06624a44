// Stage 05, written by you: the fetch as one generator that yields what it waits for, and an
// epoll loop that resumes it.
//
// Check it with `lab/check.sh 05 mine/05.cpp`; write until every line says [ok]. This file takes
// the place of 05_generators/tiny.cpp: the same fetch_all (declared in 05_generators/tiny.hpp),
// built with the same main. Chapter 05 explains each step; 05_generators/tiny.cpp is one answer.
//
// Three pieces: the Generator (its promise_type is given; send() is yours), the fetch (a
// generator: stage 01's fetch, with a co_yield where stage 01 blocked), and the EventLoop (epoll,
// and a map from each descriptor to the fetch waiting on it). As given, it compiles and every
// request fails with "not written yet". Fill in the places marked WRITE.
#include "05_generators/tiny.hpp"

#include <sys/epoll.h>
#include <sys/socket.h>

#include <cerrno>
#include <coroutine>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <system_error>
#include <unordered_map>
#include <utility>

#include "common/descriptor.hpp"
#include "common/http.hpp"

namespace sixways::generators::tiny {

// "epoll_ctl: No space left on device", for a call that failed with errno.
std::system_error os_error(const char* call) { return {errno, std::generic_category(), call}; }

// ---- 1. The generator -------------------------------------------------------------------------
//
// Calling a function whose body contains co_yield allocates its frame (its parameters, its locals,
// and where it is suspended) and returns a Generator that owns the frame; nothing of the body runs
// yet. The compiler finds promise_type in Generator and calls its members at fixed points: at the
// start (initial_suspend), at each `co_yield v` (yield_value), at `co_return v` (return_value),
// at the end (final_suspend).
//
// Only the Generator's owner resumes the body, and the body runs on the owner's stack until its
// next co_yield, which returns to the owner.
template <class Yield, class Sent, class Return>
class Generator {
public:
    struct promise_type {
        Yield current{};     // what the latest co_yield handed out
        Sent sent{};         // what send() passed in, for that co_yield to evaluate to
        Return returned{};   // what co_return gave

        Generator get_return_object() { return Generator(Handle::from_promise(*this)); }
        std::suspend_always initial_suspend() noexcept { return {}; }  // start at the first next()
        std::suspend_always final_suspend() noexcept { return {}; }    // the Generator frees the frame
        void return_value(Return value) { returned = std::move(value); }
        // An exception out of the body (epoll_ctl failing is the only one here) goes on out of
        // next() or send(), and out of run(). The full Generator keeps it for its caller instead.
        void unhandled_exception() { throw; }

        // `co_yield v` is `co_await promise.yield_value(v)`: keep v, then always suspend. When
        // the body is resumed, await_resume() is the value of the whole co_yield expression.
        struct YieldAwaiter {
            promise_type& promise;
            bool await_ready() const noexcept { return false; }
            void await_suspend(std::coroutine_handle<>) const noexcept {}
            Sent await_resume() const { return promise.sent; }
        };
        YieldAwaiter yield_value(Yield value) {
            current = value;
            return YieldAwaiter{*this};
        }
    };
    using Handle = std::coroutine_handle<promise_type>;

    explicit Generator(Handle frame) : handle_(frame) {}
    Generator(Generator&& other) noexcept : handle_(std::exchange(other.handle_, {})) {}
    ~Generator() { if (handle_) handle_.destroy(); }  // runs the frame's destructors: a socket closes

    // Runs the body to its next co_yield (true) or to its end (false). The first call starts it.
    bool next() { return send(Sent{}); }
    // The same, and the co_yield the body is suspended at evaluates to `value` (Python's send).
    bool send(Sent value) {
        // WRITE: store value in the promise's `sent`, resume the frame (handle_.resume()), and
        // return whether the body is not done yet. Then remove these two lines:
        (void)value;
        return false;
    }
    const Yield& current() const { return handle_.promise().current; }
    // What the body co_returned, once next() or send() has returned false.
    Return& result() { return handle_.promise().returned; }

private:
    Handle handle_;
};

// ---- 2. The fetch: stage 04's Fetcher as one function -------------------------------------------

// What a fetch waits for: fd to be writable (EPOLLOUT) or readable (EPOLLIN). The loop sends back
// what epoll said about it: those bits, and EPOLLERR when the socket has an error to report.
struct Wait {
    int fd = -1;
    std::uint32_t events = 0;
};
using Fetch = Generator<Wait, std::uint32_t, Result>;

// A failed system call is this request's error: `limit` if something ran out (EMFILE: no
// descriptor left, ...), else `otherwise`, with what failed and why ("connect: Connection
// refused"). Result::fail also sets timing.done.
Result failed(Result& result, ErrorKind otherwise, const char* call, int error) {
    result.fail(kind_for_errno(error, otherwise), errno_message(call, error));
    return result;
}

// One recv() into the parser. The buffer is on the stack of whoever resumed the fetch, not in the
// fetch's frame: a frame lives as long as its request, and 64 KiB in each of 10,000 frames would
// be 625 MiB.
ssize_t receive_into(int fd, ResponseParser& parser) {
    char buffer[64 * 1024];
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n > 0) parser.feed({buffer, static_cast<std::size_t>(n)});
    return n;
}

// One request, top to bottom, to its co_return of the result. `request` and `options` belong to
// fetch_all, which outlives every fetch: a generator that runs later must not hold a reference to
// anything shorter.
Fetch fetch(const Request& request, const Options& options) {
    Result result;
    Timing& timing = result.timing;  // when each phase ended: the report's latency and --trace
    timing.start = Clock::now();

    // 1. Connect to request.addresses.at(0) on a socket opened with SOCK_NONBLOCK: connect()
    //    returns 0 or EINPROGRESS; then `co_yield Wait{fd, EPOLLOUT}` evaluates to what epoll
    //    said. With EPOLLERR in it, connect_error(fd) says why the connect failed.
    // 2. Send the request (MSG_NOSIGNAL); on EAGAIN, co_yield Wait{fd, EPOLLOUT} and go on.
    // 3. Receive: co_yield Wait{fd, EPOLLIN} before each recv() (receive_into, above), until the
    //    parser says complete, as in stage 01. co_return the result at every way out.
    // WRITE. Then remove these lines:
    (void)request;
    (void)options;
    result.fail(ErrorKind::connect, "not written yet");
    co_return result;
}

// ---- 3. The loop that resumes the fetches ------------------------------------------------------
class EventLoop {
public:
    // `finished(index, result)` is called as soon as fetch number `index` has ended.
    explicit EventLoop(std::function<void(std::size_t index, Result& result)> finished)
        : epoll_(::epoll_create1(EPOLL_CLOEXEC)), finished_(std::move(finished)) {
        if (!epoll_) throw os_error("epoll_create1");
    }

    // Takes a new fetch (numbered in the order they start), runs it to its first co_yield, and
    // watches what it waits for.
    void start(Fetch fetch) {
        const std::size_t index = fetches_.size();
        Fetch& started = fetches_.emplace_back(std::move(fetch));
        if (started.next()) watch(index);
        else finished_(index, started.result());  // it failed before its first wait
    }

    // Turns until no fetch waits. Each turn sleeps in epoll_wait until at least one socket is
    // ready, then resumes the fetch waiting on each ready one, straight from the batch, and
    // sends it what epoll said. The fetch runs to its next co_yield (or its end) before send()
    // returns.
    //
    // No event can be stale, for the reason 04_tiny gives: a fetch has one socket and closes
    // only that one, the one whose event it is handling, and epoll_wait reports a descriptor at
    // most once per call.
    void run() {
        // WRITE: while any fetch waits, sleep in epoll_wait (timeout -1; EINTR is not an error);
        // for each ready descriptor, send() its fetch what epoll said (events[i].events). If it
        // yielded again, watch(index); if it has finished, erase its descriptor from waiting_
        // (closing its socket took it out of epoll) and call finished_(index, its result()).
    }

private:
    // Tells epoll what fetch number `index` waits for now, as 04_tiny's watch() does: ADD the
    // first time, MOD after that, even for the same again (one more piece of a long response).
    void watch(std::size_t index) {
        const Wait wait = fetches_[index].current();
        epoll_event event{};
        event.events = wait.events;
        event.data.fd = wait.fd;
        const int operation = waiting_.contains(wait.fd) ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
        if (::epoll_ctl(epoll_.fd(), operation, wait.fd, &event) != 0) throw os_error("epoll_ctl");
        waiting_[wait.fd] = index;
    }

    Descriptor epoll_;
    std::function<void(std::size_t, Result&)> finished_;
    std::deque<Fetch> fetches_;  // a vector would do too: moving a Fetch moves only its handle
    std::unordered_map<int, std::size_t> waiting_;  // which fetch waits on each descriptor
};

// All the requests at once, one fetch each; then the loop runs until every one has finished. No
// limit and no deadline: options.concurrency and options.timeout are not used (the command line
// refuses both).
std::vector<Result> fetch_all(const std::vector<Request>& requests, const Options& options) {
    std::vector<Result> results(requests.size());
    EventLoop loop([&](std::size_t index, Result& result) {
        results[index] = std::move(result);
        if (options.on_result) options.on_result(index, results[index]);
    });
    for (const Request& request : requests) loop.start(fetch(request, options));
    loop.run();
    return results;
}

}  // namespace sixways::generators::tiny
