// 06_tiny: the whole idea of stage 06 in one file, read top to bottom.
//
// Stage 05's fetch was a generator: it yielded what it waited for, and its loop resumed it. Here
// the fetch is a coroutine that co_awaits Futures, and four small pieces make that work:
//
//   1. EventLoop: epoll, plus a queue of callbacks that are ready to run. run() is the only place
//      where callbacks run.
//   2. Future<T>: a result that is not there yet, and the callbacks to run once it is.
//   3. Coroutine<T> and Task: a Task steps a coroutine. A step resumes it until it co_awaits a
//      Future that is still pending; the step then registers itself as that Future's done
//      callback, and when the Future gets its result, the loop runs the step again.
//   4. sock_connect, sock_sendall, sock_recv: Futures that a socket completes. Then the fetch
//      itself, and fetch_all, which starts one Task per request, all at once.
//
// This is "loop-with-coroutines.py" in C++20: a step of the crawler that A. Jesse Jiryu Davis and
// Guido van Rossum build in the book "500 Lines or Less" (chapter "A Web Crawler With asyncio
// Coroutines"), the model this stage follows. It leaves out, on purpose,
// what the rest of this folder adds: timeouts (call_later, wait_for), cancellation, a limit on the
// requests in flight, the other addresses of a name ("localhost" is ::1 and 127.0.0.1; this tries
// the first one only), gather, Futures that carry exceptions (errors are plain values here), and a
// coroutine that awaits another coroutine (a task's stack of awaited coroutines). Without a
// timeout, a server that never answers is waited for until Ctrl-C: the next files fix that.
#include "06_coroutines/tiny.hpp"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <coroutine>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>

#include "common/http.hpp"

namespace sixways::coroutines::tiny {

using Callback = std::function<void()>;

// "epoll_ctl: No space left on device", for a call that failed with errno.
std::system_error os_error(const char* call) { return {errno, std::generic_category(), call}; }

// ---- 1. The event loop -----------------------------------------------------------------------
//
// One thread, one epoll instance, one ready queue. add_reader(fd, callback) means "whenever fd is
// readable, put callback in the ready queue"; call_soon(callback) puts it there now. Nothing ever
// runs a callback on the spot: run() does, turn after turn. So whoever calls call_soon (or
// set_result, below) knows that nothing has happened yet when the call returns.
class EventLoop {
public:
    EventLoop() : epoll_(::epoll_create1(EPOLL_CLOEXEC)) { if (epoll_ < 0) throw os_error("epoll_create1"); }
    ~EventLoop() { ::close(epoll_); }
    EventLoop(const EventLoop&) = delete;  // one epoll descriptor, one close
    EventLoop& operator=(const EventLoop&) = delete;

    void call_soon(Callback callback) { ready_.push_back(std::move(callback)); }

    // A descriptor has at most one reader and one writer; adding another replaces it. epoll is
    // level-triggered: the callback is queued on every turn while fd stays ready, until removed.
    void add_reader(int fd, Callback callback) { watches_[fd].reader = std::move(callback); update(fd); }
    void add_writer(int fd, Callback callback) { watches_[fd].writer = std::move(callback); update(fd); }
    void remove_reader(int fd) { watches_[fd].reader = nullptr; update(fd); }  // none there: fine
    void remove_writer(int fd) { watches_[fd].writer = nullptr; update(fd); }

    // Turns until nothing is left to do: no callback ready, no descriptor watched. Without timers
    // nothing else could ever wake a task, so by then every task has finished. (asyncio writes it
    // run_until_complete(gather(...)); the full runtime has both.)
    void run() {
        constexpr int max_events = 1024;  // more ready descriptors wait for the next turn
        epoll_event events[max_events];
        while (!ready_.empty() || !watches_.empty()) {
            // With callbacks waiting, only look at epoll; with none, sleep in it until a socket is
            // ready.
            const int count = ::epoll_wait(epoll_, events, max_events, ready_.empty() ? -1 : 0);
            if (count < 0 && errno != EINTR) throw os_error("epoll_wait");  // EINTR: a signal
            for (int i = 0; i < count; ++i) {
                // An error or a hang-up wakes both sides: the call each one makes then reports it.
                const Watch& watch = watches_.at(events[i].data.fd);
                const bool failed = (events[i].events & (EPOLLERR | EPOLLHUP)) != 0;
                if (watch.reader && (failed || (events[i].events & EPOLLIN))) call_soon(watch.reader);
                if (watch.writer && (failed || (events[i].events & EPOLLOUT))) call_soon(watch.writer);
            }
            // The callbacks that are ready now, and no more: those they schedule wait for the next
            // turn. Each runs as a copy taken out of the queue, so it may remove its own watch.
            // (None is stale: no timers here, and a fetch closes its socket after removing its watch.)
            for (std::size_t n = ready_.size(); n > 0; --n) {
                const Callback callback = std::move(ready_.front());
                ready_.pop_front();
                callback();
            }
        }
    }

private:
    // What fd is watched for, and `events`, what epoll was last told.
    struct Watch { Callback reader, writer; std::uint32_t events = 0; };

    // Tells epoll what fd is watched for now: ADD the first time, MOD on a change, DEL when nothing
    // is left, nothing if nothing changed. One epoll_ctl per change, as in 06_coroutines (chapter
    // 04's deeper page measures batching them). Throws if epoll refuses (ENOMEM, ENOSPC).
    void update(int fd) {
        Watch& watch = watches_[fd];
        epoll_event event{};
        event.events = (watch.reader ? EPOLLIN : 0u) | (watch.writer ? EPOLLOUT : 0u);
        event.data.fd = fd;
        if (event.events != watch.events) {
            const int op = watch.events == 0   ? EPOLL_CTL_ADD
                           : event.events == 0 ? EPOLL_CTL_DEL : EPOLL_CTL_MOD;
            if (::epoll_ctl(epoll_, op, fd, &event) != 0) throw os_error("epoll_ctl");
        }
        watch.events = event.events;
        if (event.events == 0) watches_.erase(fd);
    }

    int epoll_;
    std::deque<Callback> ready_;
    std::unordered_map<int, Watch> watches_;
};

// ---- 2. The Future ---------------------------------------------------------------------------
//
// A result that is set once, later, by whoever does the work (here, a socket's callback), and the
// callbacks that want to hear of it. Copies share one state: the callback that will set the result
// and the coroutine that waits for it each hold a copy.
template <class T>
class Future {
public:
    explicit Future(EventLoop& loop) : state_(std::make_shared<State>(State{&loop, {}, {}})) {}

    bool done() const { return state_->result.has_value(); }
    const T& result() const { return state_->result.value(); }  // throws if not done

    // The callbacks go to the ready queue: none runs inside set_result. If one did, it would run in
    // the middle of whatever called set_result, perhaps inside another task's step.
    void set_result(T value) {
        state_->result.emplace(std::move(value));
        for (Callback& callback : state_->callbacks) state_->loop->call_soon(std::move(callback));
        state_->callbacks.clear();
    }
    void add_done_callback(Callback callback) {
        if (done()) state_->loop->call_soon(std::move(callback));  // later all the same, never now
        else state_->callbacks.push_back(std::move(callback));
    }

    // `co_await x` works on any object with these three members, which C++ calls an awaiter: it
    // asks await_ready(), then await_suspend(handle of the waiting coroutine) if it is not ready,
    // and await_resume() for the value of the whole `co_await` expression. A Future is its own.
    // Done already: the coroutine goes straight on. Pending: the coroutine suspends, and then
    // await_suspend runs, still inside Task::step: there the step registers itself as this
    // Future's done callback. Resumed: the Future's result is the value of `co_await future`.
    bool await_ready() const { return done(); }
    template <class Promise>
    void await_suspend(std::coroutine_handle<Promise> handle) { add_done_callback(handle.promise().step); }
    T await_resume() const { return result(); }

private:
    struct State { EventLoop* loop; std::optional<T> result; std::vector<Callback> callbacks; };
    std::shared_ptr<State> state_;
};

// ---- 3. The coroutine, and the task that steps it -------------------------------------------
//
// Coroutine<T> is the return type of a coroutine function such as fetch, below. Calling fetch
// allocates its frame (its parameters, its locals, and where it stopped) and returns a Coroutine
// that owns the frame; nothing of fetch's body runs yet. The compiler finds promise_type in it and
// calls its members at fixed points: at the start (initial_suspend), at co_return (return_value),
// at the end (final_suspend).
//
// A Coroutine cannot be co_awaited (it has no await_ready), so here a coroutine awaits only
// Futures. Awaiting another coroutine, as a function calls a function, is what task.hpp adds.
template <class T>
struct Coroutine {
    struct promise_type {
        std::optional<T> value;  // what co_return gave
        Callback step;           // the Task's step: what a pending Future calls back (see Future)

        Coroutine get_return_object() { return Coroutine(Handle::from_promise(*this)); }
        std::suspend_always initial_suspend() noexcept { return {}; }  // start on the first step
        std::suspend_always final_suspend() noexcept { return {}; }    // keep `value` for the Task
        void return_value(T result) { value.emplace(std::move(result)); }
        // An exception out of the coroutine (epoll_ctl failing, or memory running out) goes on out
        // of Task::step and run(). The full runtime keeps it in the task instead.
        void unhandled_exception() { throw; }
    };
    using Handle = std::coroutine_handle<promise_type>;

    explicit Coroutine(Handle frame) : handle(frame) {}
    Coroutine(Coroutine&& other) noexcept : handle(std::exchange(other.handle, {})) {}
    ~Coroutine() { if (handle) handle.destroy(); }  // runs the frame's destructors: a socket closes

    Handle handle;  // the frame: resume() it, ask if it is done(), reach its promise()
};

// A Task steps one coroutine from Future to Future. It is also a Future itself, of the coroutine's
// result (asyncio's Task is a Future too). The invariant: until the coroutine has finished, its
// task is either scheduled (its step is in the ready queue), or waiting (its step is the done
// callback of one pending Future), or running (inside step). Nothing else can wake it.
//
// Nothing resumes a coroutine but step, and steps run only from the ready queue, never from inside
// another coroutine. (C++20 lets one coroutine resume the next one directly, "symmetric transfer",
// but g++ 12 does not promise that this is a tail call: a long chain of them can overflow the
// stack. From the queue, every step starts on the same short stack.)
template <class T>
class Task : public Future<T> {
public:
    Task(EventLoop& loop, Coroutine<T> coroutine) : Future<T>(loop), coroutine_(std::move(coroutine)) {
        coroutine_.handle.promise().step = [this] { step(); };
        loop.call_soon(coroutine_.handle.promise().step);  // the first step runs on the next turn
    }
    Task(const Task&) = delete;  // the steps point to this task: it must never move

    // Runs the coroutine until it co_awaits a pending Future (whose done callback is now this
    // step), or to its end. At the end, the task takes the result and frees the frame.
    void step() {
        coroutine_.handle.resume();
        if (!coroutine_.handle.done()) return;
        this->set_result(std::move(*coroutine_.handle.promise().value));  // callbacks run later
        std::exchange(coroutine_.handle, {}).destroy();
    }

private:
    Coroutine<T> coroutine_;
};

// ---- 4. Futures that a socket completes ------------------------------------------------------
//
// Each makes its system call, at once or when the loop calls it back because the socket is ready,
// and sets the Future's result when the call has done its work. It stops watching the socket
// before it sets the result, so a fetch never closes a socket that the loop is still watching.
// Errors are values: 0, or an errno.

// connect() on a non-blocking socket returns at once with EINPROGRESS (or EINTR, when a signal
// came first: the connect goes on all the same). The socket turns writable when the handshake has
// ended, either way, and SO_ERROR then says how: 0 (connected) or, say, ECONNREFUSED.
Future<int> sock_connect(EventLoop& loop, int fd, const Address& address) {
    Future<int> connected(loop);
    const int error = ::connect(fd, address.get(), address.length) == 0 ? 0 : errno;
    if (error != EINPROGRESS && error != EINTR) {
        connected.set_result(error);  // connected at once, or failed at once
        return connected;
    }
    loop.add_writer(fd, [&loop, fd, connected]() mutable {
        loop.remove_writer(fd);
        int result = 0;
        socklen_t length = sizeof result;
        if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &result, &length) != 0) result = errno;
        connected.set_result(result);
    });
    return connected;
}

// send() may take only part of the bytes, when the socket's buffer is full; the rest then waits
// until the socket is writable again. This one tries at once (a new socket has room for a
// request). Each wait makes a new callback that holds what is left: the loop runs a copy of a
// callback, so a callback cannot keep count in itself. `rest` points into the fetch's frame, which
// outlives the wait. MSG_NOSIGNAL: a peer that has closed gives EPIPE, instead of a SIGPIPE that
// would end the process. EAGAIN, or EINTR (a signal came first): try again when writable.
void send_rest(EventLoop& loop, int fd, std::string_view rest, Future<int> sent) {
    const ssize_t n = ::send(fd, rest.data(), rest.size(), MSG_NOSIGNAL);
    const int error = n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR ? errno : 0;
    if (n > 0) rest.remove_prefix(static_cast<std::size_t>(n));
    if (!rest.empty() && error == 0) {
        loop.add_writer(fd, [&loop, fd, rest, sent] { send_rest(loop, fd, rest, sent); });
        return;
    }
    loop.remove_writer(fd);
    sent.set_result(error);
}

Future<int> sock_sendall(EventLoop& loop, int fd, std::string_view bytes) {
    Future<int> sent(loop);
    send_rest(loop, fd, bytes, sent);
    return sent;
}

// What one recv() brought: some bytes, or the end of the stream (no bytes, error 0), or an errno.
struct Received { std::string bytes; int error = 0; };

// This one waits first, as 500 Lines' read() does: the first recv comes just after the request
// was sent, when the answer cannot be there yet. recv() then takes whatever has arrived. The
// buffer is on the callback's stack, not in the fetch's frame: a frame lives as long as its
// request, and a 64 KiB buffer in each of 10,000 frames would be 625 MiB.
Future<Received> sock_recv(EventLoop& loop, int fd) {
    Future<Received> received(loop);
    loop.add_reader(fd, [&loop, fd, received]() mutable {
        char buffer[64 * 1024];
        const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;  // again
        const int error = n < 0 ? errno : 0;  // before remove_reader's epoll_ctl can change errno
        loop.remove_reader(fd);
        received.set_result(Received{n > 0 ? std::string(buffer, static_cast<std::size_t>(n)) : "", error});
    });
    return received;
}

// A socket descriptor that closes itself on every way out of the fetch. Closing it takes it out of
// epoll too (the kernel forgets a closed descriptor), though the loop no longer watches it anyway.
struct Socket {
    int fd = -1;
    Socket() = default;
    Socket(const Socket&) = delete;  // one owner, one close
    ~Socket() { if (fd >= 0) ::close(fd); }
};

// ---- The fetch: stage 05's fetch_one, with co_await where it had co_yield ---------------------

// An error: what failed and where, in the words of every stage ("connect: Connection refused").
Result failed(Result& result, ErrorKind kind, std::string message) {
    result.fail(kind, std::move(message));
    return result;
}

// A failed system call: a `limit` error if something ran out (EMFILE, ...), else `otherwise`.
Result failed(Result& result, ErrorKind otherwise, const char* call, int error) {
    return failed(result, kind_for_errno(error, otherwise), errno_message(call, error));
}

// One request, top to bottom. While it waits, its locals (the socket, the parser) stay in its
// frame and the loop runs the other requests. `request` and `options` belong to fetch_all, which
// outlives every task: a coroutine that runs later must not hold a reference to anything shorter.
//
// Each co_await below takes a plain function call. g++ 12 may destroy a capturing lambda or an
// aggregate that is a temporary inside a co_await expression twice (GCC PR 107288): such a thing
// would be named in a local first.
Coroutine<Result> fetch(EventLoop& loop, const Request& request, const Options& options) {
    Result result;
    result.timing.start = Clock::now();

    // 1. Connect to the first resolved address (the command line resolves the name up front).
    const Address& address = request.addresses.at(0);
    Socket socket;
    socket.fd = ::socket(address.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (socket.fd < 0) co_return failed(result, ErrorKind::connect, "socket", errno);  // EMFILE: none left
    int error = co_await sock_connect(loop, socket.fd, address);
    if (error != 0) co_return failed(result, ErrorKind::connect, "connect", error);
    result.timing.connected = Clock::now();

    // 2. Send the whole request.
    const std::string request_bytes = build_get_request(request.url);
    error = co_await sock_sendall(loop, socket.fd, request_bytes);
    if (error != 0) co_return failed(result, ErrorKind::send, "send", error);
    result.timing.sent = Clock::now();

    // 3. Receive until the parser says the response is complete (a server may keep the connection
    //    open after answering). The end of the stream completes a body framed by the close, and
    //    cuts any other short ("connection closed after 10 of 100 body bytes").
    using Status = ResponseParser::Status;
    ResponseParser parser(options.body_cap, options.keep_headers);
    for (;;) {
        const Received received = co_await sock_recv(loop, socket.fd);
        if (received.error != 0) co_return failed(result, ErrorKind::receive, "recv", received.error);
        const bool closed = received.bytes.empty();
        if (!closed && result.timing.first_byte == Clock::time_point{}) {
            result.timing.first_byte = Clock::now();
        }
        const Status status = closed ? parser.finish() : parser.feed(received.bytes);
        if (status == Status::complete) break;
        if (status == Status::error) {
            co_return failed(result, closed ? ErrorKind::receive : ErrorKind::protocol, parser.error());
        }
    }
    result.response = parser.take_response();
    result.timing.done = Clock::now();
    co_return result;  // `socket` closes here, as at every co_return above
}

// All the requests at once, one task each; then the loop runs until every one has finished. There
// is no limit and no deadline here: options.concurrency and options.timeout are not used (the
// command line refuses both). Each task's done callback tells on_result of its result.
std::vector<Result> fetch_all(const std::vector<Request>& requests, const Options& options) {
    EventLoop loop;
    std::deque<Task<Result>> tasks;  // a deque never moves what it holds, and a task must not move
    for (std::size_t index = 0; index < requests.size(); ++index) {
        Task<Result>& task = tasks.emplace_back(loop, fetch(loop, requests[index], options));
        if (options.on_result) {
            task.add_done_callback([&options, &task, index] { options.on_result(index, task.result()); });
        }
    }
    loop.run();
    std::vector<Result> results;
    for (const Task<Result>& task : tasks) results.push_back(task.result());  // each one is done
    return results;
}

}  // namespace sixways::coroutines::tiny
