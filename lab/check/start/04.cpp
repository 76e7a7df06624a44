// Stage 04, written by you: an epoll loop, and the fetch cut into callbacks.
//
// Check it with `lab/check.sh 04 mine/04.cpp`; write until every line says [ok]. This file takes
// the place of 04_callbacks/tiny.cpp: the same fetch_all (declared in 04_callbacks/tiny.hpp),
// built with the same main. Chapter 04 explains each step; 04_callbacks/tiny.cpp is one answer.
//
// Two pieces: the EventLoop (epoll, and a map from each watched descriptor to the callback to call
// when it is ready), and the Fetcher (one request as an object, whose steps each do what they can
// without waiting, tell the loop which step comes next, and return). As given, it compiles and
// every request fails with "not written yet". Fill in the places marked WRITE.
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
    // readable), instead of fd's callback so far. epoll_ctl: EPOLL_CTL_ADD for a descriptor not
    // watched yet, EPOLL_CTL_MOD for one that is (event.data.fd = fd tells you which one is ready).
    // If epoll_ctl fails, throw os_error("epoll_ctl").
    void watch(int fd, std::uint32_t events, Callback callback) {
        // WRITE
        (void)fd;
        (void)events;
        (void)callback;
    }

    // Stop watching fd, just before it is closed (closing a socket takes it out of epoll).
    void forget(int fd) { callbacks_.erase(fd); }

    // Turns until no descriptor is watched: sleep in epoll_wait (timeout -1) until at least one
    // socket is ready, then call the callback of each ready one. Call a copy: a callback may
    // replace itself (watch) or remove itself (forget). epoll_wait failing with EINTR (a signal)
    // is not an error: go round again.
    void run() {
        // WRITE
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

    // 1. Set result_.timing.start; open a socket with SOCK_NONBLOCK and start connecting to
    //    request_.addresses.at(0): connect() returns 0 or EINPROGRESS (anything else: fail). Then
    //    watch the socket for EPOLLOUT, with on_connected as its callback.
    void start() {
        result_.timing.start = Clock::now();
        // WRITE. Then remove these lines:
        (void)request_;
        (void)sent_;
        fail(ErrorKind::connect, "not written yet", 0);
    }

private:
    // 2. The handshake has ended: connect_error(fd) (common/fetch.hpp) says how, 0 or an errno.
    //    Connected: timing.connected, build the request's bytes, send_request().
    void on_connected() {
        // WRITE
    }

    // 3. Send what the kernel takes (MSG_NOSIGNAL). EAGAIN: watch for EPOLLOUT with send_request
    //    as the callback, and return; `sent_` remembers how far it got. All sent: timing.sent,
    //    and watch for EPOLLIN with on_readable.
    void send_request() {
        // WRITE
    }

    // 4. Called each time the socket is readable: one recv() (64 KiB on the stack), into the
    //    parser, as in stage 01. need_more: return, the loop calls again. EAGAIN: return too.
    //    Complete: result_.response, timing.done, finish(). Error: fail it, finish().
    void on_readable() {
        // WRITE
    }

    // A failed system call is this request's error: `limit` if something ran out, else `otherwise`.
    // (The starting file calls it with error 0 for "not written yet".)
    void fail(ErrorKind otherwise, const char* call, int error) {
        result_.fail(kind_for_errno(error, otherwise), error == 0 ? call : errno_message(call, error));
        finish();
    }

    // The result is final: stop watching the socket, close it, and tell on_result.
    void finish() {
        loop_.forget(socket_.fd());
        socket_.close();
        if (options_.on_result) options_.on_result(index_, result_);
    }

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
// has its result.
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
