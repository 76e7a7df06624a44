// 05_tiny: the whole idea of stage 05 in one file, read top to bottom.
//
// Stage 04 cut the fetch into callbacks and kept its state in an object by hand. Here the fetch is
// one function again, top to bottom like stage 01's, and where stage 01 blocked it co_yields what
// it waits for ("this socket, writable"). That suspends it: its locals (the socket, how much was
// sent, the parser) wait in its coroutine frame, and the loop resumes it when epoll says the
// socket is ready. Three pieces:
//
//   1. Generator<Yield, Sent, Return>: a coroutine type, its promise_type written out. next()
//      runs the body to its next co_yield; send(v) does the same, and that co_yield evaluates to
//      v. At the end, result() is what the body co_returned.
//   2. fetch: one request, a generator that yields a Wait at each place where it waits.
//   3. EventLoop: 04_tiny's loop, whose map goes from a descriptor to the fetch waiting on it,
//      not to a callback. run() resumes that fetch, sends it what epoll said, and watches what it
//      waits for next.
//
// It leaves out, on purpose, what the rest of this folder adds: a deadline (here a server that
// never answers is waited for until Ctrl-C), the other addresses of a name (this tries the first
// one only), a limit on the requests in flight, and a Generator that keeps an exception for its
// caller. fetch_split.cpp then shows what generators cannot do: a generator cannot hand its
// waiting to another one. Stage 06 fixes that with co_await.
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
        // An exception out of the body (out of memory, say: a failed call is a result) goes on
        // out of next() or send(), and out of run(). The full Generator keeps it for its caller.
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
        handle_.promise().sent = value;
        handle_.resume();
        return !handle_.done();
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

    // 1. Connect to the first address. A non-blocking connect() returns at once with EINPROGRESS
    //    (or 0, already connected), and the socket turns writable when the handshake has ended,
    //    either way: with EPOLLERR if it failed, and then SO_ERROR says why (ECONNREFUSED, ...).
    const Address& address = request.addresses.at(0);
    const Descriptor socket(::socket(address.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!socket) co_return failed(result, ErrorKind::connect, "socket", errno);
    const bool begun = ::connect(socket.fd(), address.get(), address.length) == 0 || errno == EINPROGRESS;
    if (!begun) co_return failed(result, ErrorKind::connect, "connect", errno);
    const std::uint32_t events = co_yield Wait{socket.fd(), EPOLLOUT};  // stage 01 blocked here
    const int error = (events & EPOLLERR) != 0 ? connect_error(socket.fd()) : 0;
    if (error != 0) co_return failed(result, ErrorKind::connect, "connect", error);
    timing.connected = Clock::now();

    // 2. Send the request. send() may take only part of it, when the socket's buffer is full
    //    (EAGAIN): then wait until it is writable, and go on. MSG_NOSIGNAL: a peer that has closed
    //    gives EPIPE, instead of a SIGPIPE that would end the process.
    const std::string bytes = build_get_request(request.url);
    for (std::size_t sent = 0; sent < bytes.size();) {
        const ssize_t n = ::send(socket.fd(), &bytes[sent], bytes.size() - sent, MSG_NOSIGNAL);
        if (n < 0 && errno == EAGAIN) co_yield Wait{socket.fd(), EPOLLOUT};  // then send() says any error
        else if (n < 0) co_return failed(result, ErrorKind::send, "send", errno);
        else sent += static_cast<std::size_t>(n);
    }
    timing.sent = Clock::now();

    // 3. Receive until the parser says the response is complete (a server may keep the connection
    //    open after answering). Wait first: just after sending, the answer is rarely there yet.
    //    recv() returning 0, the end of the stream, completes a body framed by the close and cuts
    //    any other short ("connection closed after 10 of 100 body bytes"), a `receive` error.
    ResponseParser parser(options.body_cap, options.keep_headers);
    for (;;) {
        co_yield Wait{socket.fd(), EPOLLIN};  // the recv() below reports any error
        const ssize_t n = receive_into(socket.fd(), parser);
        if (n < 0 && errno == EAGAIN) continue;  // nothing there after all: wait on
        if (n < 0) co_return failed(result, ErrorKind::receive, "recv", errno);
        if (n > 0 && timing.first_byte == Clock::time_point{}) timing.first_byte = Clock::now();
        const ResponseParser::Status status = n == 0 ? parser.finish() : parser.status();
        if (status == ResponseParser::Status::complete) break;
        if (status == ResponseParser::Status::error) {
            result.fail(n == 0 ? ErrorKind::receive : ErrorKind::protocol, parser.error());
            co_return result;
        }
    }
    result.response = parser.take_response();
    timing.done = Clock::now();
    co_return result;  // `socket` closes here, as at every co_return above
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
        constexpr int max_events = 1024;  // more ready descriptors wait for the next turn
        epoll_event events[max_events];
        while (!waiting_.empty()) {
            const int count = ::epoll_wait(epoll_.fd(), events, max_events, -1);
            if (count < 0 && errno != EINTR) throw os_error("epoll_wait");  // EINTR: a signal
            for (int i = 0; i < count; ++i) {
                const std::size_t index = waiting_.at(events[i].data.fd);
                if (fetches_[index].send(events[i].events)) {
                    watch(index);
                } else {
                    waiting_.erase(events[i].data.fd);  // its socket has closed: epoll forgot it
                    finished_(index, fetches_[index].result());
                }
            }
        }
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
    // A deque, as in 04_tiny, though a vector would do here: moving a Fetch moves only its handle,
    // and the frame, where the fetch keeps its state, stays where it is.
    std::deque<Fetch> fetches_;
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
