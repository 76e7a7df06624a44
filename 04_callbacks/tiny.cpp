// 04_tiny: the whole idea of stage 04 in one file, read top to bottom.
//
// Stage 03 asked every socket, over and over, whether it had news, and a core spun while the
// server thought. Here the kernel answers that question: an epoll instance holds the sockets we
// wait for, and epoll_wait() sleeps until some of them are ready, and says which. Two pieces:
//
//   1. EventLoop: epoll, and a map from each watched descriptor to the callback to call when it is
//      ready. run() waits, then calls the callbacks of the descriptors that are ready.
//   2. Fetcher: one request as an object. Each step does what it can without waiting, tells the
//      loop which step comes next, and returns: start -> on_connected -> send_request ->
//      on_readable -> finish.
//
// That is the price of this stage. In stage 01 the socket, the request text, how much of it was
// sent and the parser were local variables of one function, and what came next was the next line.
// 03_tiny already kept them in an object, with a phase that its loop read on every pass. Here the
// phase goes too: what comes next is whichever callback was registered last, and each step, read
// on its own, is a fragment of the story. Stage 05 writes the fetch as one function again.
//
// This is "loop-with-callbacks.py", a step of the crawler in the book "500 Lines or Less" (A. Jesse
// Jiryu Davis and Guido van Rossum, "A Web Crawler With asyncio Coroutines"), in C++. It leaves
// out, on purpose, what the rest of this folder adds: a deadline (timers; here a server that never
// answers is waited for until Ctrl-C), the other addresses of a name (this tries the first one
// only), a limit on the requests in flight, and a ready queue (run() says why this loop needs
// none).
#include "04_callbacks/tiny.hpp"

#include <sys/epoll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <system_error>
#include <unordered_map>

#include "common/descriptor.hpp"
#include "common/http.hpp"

namespace sixways::callbacks::tiny {

using Callback = std::function<void()>;

// "epoll_ctl: No space left on device", for a call that failed with errno.
std::system_error os_error(const char* call) { return {errno, std::generic_category(), call}; }

// ---- 1. The event loop -----------------------------------------------------------------------
class EventLoop {
public:
    EventLoop() : epoll_(::epoll_create1(EPOLL_CLOEXEC)) {
        if (!epoll_) throw os_error("epoll_create1");
    }

    // From now on, call `callback` whenever fd is ready for `events` (EPOLLOUT: writable, EPOLLIN:
    // readable), instead of fd's callback so far. epoll is level-triggered: the callback is called
    // on every turn while fd stays ready. epoll also reports an error or a hang-up unasked; the
    // callback's next system call on fd then says what happened. epoll refusing a socket (ENOSPC,
    // ENOMEM) throws, out of fetch_all: it is a limit, and this file has none.
    void watch(int fd, std::uint32_t events, Callback callback) {
        epoll_event event{};
        event.events = events;
        event.data.fd = fd;
        const int operation = callbacks_.contains(fd) ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
        if (::epoll_ctl(epoll_.fd(), operation, fd, &event) != 0) throw os_error("epoll_ctl");
        callbacks_[fd] = std::move(callback);
    }

    // Stop watching fd, just before it is closed. epoll needs no EPOLL_CTL_DEL: closing the last
    // descriptor of a socket takes it out of every epoll instance (this file never duplicates one).
    void forget(int fd) { callbacks_.erase(fd); }

    // Turns until no descriptor is watched. Without timers nothing else could call a step, so by
    // then every request has its result. Each turn sleeps in epoll_wait until at least one socket
    // is ready, then calls the callback of each ready one, straight from the batch.
    //
    // Can an event of the batch be stale: for a socket that a callback earlier in the same batch
    // closed? Not here. A callback closes only its own socket, the one whose event it is handling,
    // and epoll_wait reports a descriptor at most once per call; so every later event of the batch
    // is for a socket still open and still in the map (at() would throw if one were not). The full
    // loop has a second way for a request to end, its deadline, and runs a turn's callbacks from a
    // queue: by the time a queued callback runs, its request may have ended the other way, and a
    // new socket may have its socket's number. So event_loop.cpp queues Handles it can cancel.
    void run() {
        constexpr int max_events = 1024;  // more ready descriptors wait for the next turn
        epoll_event events[max_events];
        while (!callbacks_.empty()) {
            const int count = ::epoll_wait(epoll_.fd(), events, max_events, -1);
            if (count < 0 && errno != EINTR) throw os_error("epoll_wait");  // EINTR: a signal
            for (int i = 0; i < count; ++i) {
                // A copy: the callback may replace itself (watch) or remove itself (forget).
                const Callback callback = callbacks_.at(events[i].data.fd);
                callback();
            }
        }
    }

private:
    Descriptor epoll_;
    std::unordered_map<int, Callback> callbacks_;
};

// ---- 2. The fetch, as callbacks --------------------------------------------------------------
//
// One request, from its connect to its result. Every step ends in one of two ways: it registers
// the next step with the loop and returns, or it calls finish(). So finish() runs exactly once.
class Fetcher {
public:
    Fetcher(EventLoop& loop, const Request& request, const Options& options, std::size_t index,
            Result& result)
        : loop_(loop), request_(request), options_(options), index_(index), result_(result),
          parser_(options.body_cap, options.keep_headers) {}
    Fetcher(const Fetcher&) = delete;  // the loop's callbacks point to this Fetcher: it must not move

    // 1. Connect to the first address. A non-blocking connect() returns at once with EINPROGRESS
    //    (or 0, already connected), and the socket turns writable when the handshake has ended,
    //    either way.
    void start() {
        result_.timing.start = Clock::now();
        const Address& address = request_.addresses.at(0);
        socket_ = Descriptor(::socket(address.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
        if (!socket_) return fail(ErrorKind::connect, "socket", errno);
        const bool begun = ::connect(socket_.fd(), address.get(), address.length) == 0 || errno == EINPROGRESS;
        if (!begun) return fail(ErrorKind::connect, "connect", errno);
        loop_.watch(socket_.fd(), EPOLLOUT, [this] { on_connected(); });
    }

private:
    // 2. The handshake has ended. SO_ERROR says how: 0, or the errno a blocking connect() would
    //    have returned (ECONNREFUSED, ...).
    void on_connected() {
        const int error = connect_error(socket_.fd());
        if (error != 0) return fail(ErrorKind::connect, "connect", error);
        result_.timing.connected = Clock::now();
        request_bytes_ = build_get_request(request_.url);
        send_request();
    }

    // 3. Send the request. send() may take only part of it, when the socket's buffer is full
    //    (EAGAIN); then this same step runs again once the socket is writable, and `sent_`
    //    remembers how far it got. MSG_NOSIGNAL: a peer that has closed gives EPIPE, instead of a
    //    SIGPIPE that would end the process.
    void send_request() {
        while (sent_ < request_bytes_.size()) {
            const ssize_t n = ::send(socket_.fd(), &request_bytes_[sent_], request_bytes_.size() - sent_,
                                     MSG_NOSIGNAL);
            if (n < 0 && errno == EAGAIN) {
                return loop_.watch(socket_.fd(), EPOLLOUT, [this] { send_request(); });
            }
            if (n < 0) return fail(ErrorKind::send, "send", errno);
            sent_ += static_cast<std::size_t>(n);
        }
        result_.timing.sent = Clock::now();
        loop_.watch(socket_.fd(), EPOLLIN, [this] { on_readable(); });
    }

    // 4. Called each time the socket is readable. One recv() takes what has arrived (if more is
    //    there, the loop calls again on its next turn), and the parser says whether the response
    //    is complete: a server may keep the connection open after answering. recv() returning 0,
    //    the end of the stream, completes a body framed by the close and cuts any other short
    //    ("connection closed after 10 of 100 body bytes"), a `receive` error. The buffer is on the
    //    stack: the Fetcher keeps only what must outlive this call.
    void on_readable() {
        using Status = ResponseParser::Status;
        Timing& timing = result_.timing;
        char buffer[64 * 1024];
        const ssize_t n = ::recv(socket_.fd(), buffer, sizeof buffer, 0);
        if (n < 0 && errno == EAGAIN) return;  // nothing there after all: wait on
        if (n < 0) return fail(ErrorKind::receive, "recv", errno);
        if (n > 0 && timing.first_byte == Clock::time_point{}) timing.first_byte = Clock::now();
        const Status status = n == 0 ? parser_.finish() : parser_.feed({buffer, std::size_t(n)});
        if (status == Status::need_more) return;  // the rest comes in later calls
        if (status == Status::error) {
            result_.fail(n == 0 ? ErrorKind::receive : ErrorKind::protocol, parser_.error());
            return finish();
        }
        result_.response = parser_.take_response();
        timing.done = Clock::now();
        finish();
    }

    // A failed system call is this request's error: `limit` if something ran out (EMFILE: no
    // descriptor left, ...), else `otherwise`, with what failed and why ("connect: Connection
    // refused"). Result::fail also sets timing.done.
    void fail(ErrorKind otherwise, const char* call, int error) {
        result_.fail(kind_for_errno(error, otherwise), errno_message(call, error));
        finish();
    }

    // The result is final: stop watching the socket, close it, and tell on_result.
    void finish() {
        loop_.forget(socket_.fd());
        socket_.close();
        if (options_.on_result) options_.on_result(index_, result_);
    }

    // Read these last. In 01_tiny the last four were local variables of one function; here they
    // must outlive every step, so they live in the object (as in 03_tiny's Connection).
    EventLoop& loop_;
    const Request& request_;  // fetch_all's, which outlive every Fetcher
    const Options& options_;
    std::size_t index_;       // for on_result
    Result& result_;          // this request's slot in fetch_all's results
    Descriptor socket_;
    std::string request_bytes_;
    std::size_t sent_ = 0;
    ResponseParser parser_;
};

// All the requests at once: each Fetcher starts (its connect), then the loop runs until every one
// has its result. No limit and no deadline: options.concurrency and options.timeout are not used
// (the command line refuses both).
std::vector<Result> fetch_all(const std::vector<Request>& requests, const Options& options) {
    EventLoop loop;
    std::vector<Result> results(requests.size());
    std::deque<Fetcher> fetchers;  // a deque never moves what it holds, and a Fetcher must not move
    for (std::size_t index = 0; index < requests.size(); ++index) {
        fetchers.emplace_back(loop, requests[index], options, index, results[index]).start();
    }
    loop.run();
    return results;
}

}  // namespace sixways::callbacks::tiny
