// Stage 05: generators. Read fetch_one first: it is stage 01's blocking fetch with a co_yield at
// every place where stage 01 blocked. Then the loop that runs many of them (FetchLoop), then the
// small helpers. fetch_split.cpp shows what goes wrong when the fetch is split into pieces.
#include "05_generators/fetch.hpp"

#include <sys/epoll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstddef>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "common/http.hpp"

namespace sixways::generators {

// ---- The lesson: one request, top to bottom ----
//
// Every local below (the socket, how much was sent, the parser) lives in this coroutine's frame,
// allocated once when fetch_one() is called. Stage 04 kept the same things in a per-request object
// and a state field saying which callback comes next; here the place where the body is suspended
// *is* the state, and the compiler keeps it.
//
// The result is written into `result` (a slot in fetch_all's vector) rather than yielded at the
// end. Yielding it would make the yield type a Wait-or-Result, the loop would have to tell them
// apart on every resume, and the generator would still have to be resumed once more to finish.
// With the slot, the rule is simple: when the generator is done, its result is final.
Fetch fetch_one(const Request& request, const Options& options, Result& result) {
    result.timing.start = Clock::now();

    // 1. Connect, trying each resolved address in turn. A non-blocking connect() returns at once
    //    with EINPROGRESS; the socket turns writable when the handshake has ended, either way, and
    //    SO_ERROR then says how it ended.
    Descriptor socket;
    const char* failed_call = "connect";  // which call failed for the last address tried,
    int error = 0;                        // and with which errno
    if (request.addresses.empty()) {
        fail(result, ErrorKind::resolve, "resolve: no address to connect to");
        co_return;
    }
    for (const Address& address : request.addresses) {
        socket =
            Descriptor(::socket(address.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
        if (!socket) {  // e.g. EMFILE (no descriptor left), EAFNOSUPPORT (no IPv6 on this machine)
            failed_call = "socket";
            error = errno;
            continue;
        }
        if (::connect(socket.fd(), address.get(), address.length) == 0) break;  // connected at once
        failed_call = "connect";
        error = errno;
        if (error == EINPROGRESS) {
            const Event event = co_yield Wait{socket.fd(), Interest::writable};
            if (event == Event::timed_out) {
                fail(result, ErrorKind::timeout, timeout_message(options.timeout, "connecting"));
                co_return;  // `socket` closes as the body ends, here and at every co_return below
            }
            error = connect_error(socket.fd());
            if (error == 0) break;  // connected
        }
        socket.close();  // this address failed; try the next one
    }
    if (!socket) {
        // EMFILE, ENFILE or EADDRNOTAVAIL (no ephemeral port left) mean we ran out of something,
        // not that the server is unreachable: kind_for_errno calls those `limit`.
        fail(result, kind_for_errno(error, ErrorKind::connect), errno_message(failed_call, error));
        co_return;
    }
    result.timing.connected = Clock::now();

    // 2. Send the request. send() may take only part of it when the socket's buffer is full; then
    //    wait until it is writable again and send the rest. MSG_NOSIGNAL: a peer that has closed
    //    gives EPIPE instead of killing the process with SIGPIPE.
    const std::string request_text = build_get_request(request.url);
    std::size_t sent = 0;
    while (sent < request_text.size()) {
        const ssize_t n = ::send(socket.fd(), request_text.data() + sent,
                                 request_text.size() - sent, MSG_NOSIGNAL);
        if (n >= 0) {
            sent += static_cast<std::size_t>(n);
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            const Event event = co_yield Wait{socket.fd(), Interest::writable};
            if (event == Event::timed_out) {
                fail(result, ErrorKind::timeout, timeout_message(options.timeout, "sending"));
                co_return;
            }
        } else {
            error = errno;
            fail(result, kind_for_errno(error, ErrorKind::send), errno_message("send", error));
            co_return;
        }
    }
    result.timing.sent = Clock::now();

    // 3. Receive until the parser says the response is complete, or the server closes. Read
    //    until recv() says EAGAIN (nothing more for now), and only then wait: epoll reports
    //    readiness, not amounts, so we take everything that is there each time we are resumed.
    ResponseParser parser(options.body_cap, options.keep_headers);
    for (;;) {
        const ssize_t n = receive_into(socket.fd(), parser);
        if (n > 0) {
            if (result.timing.first_byte == Clock::time_point{}) {
                result.timing.first_byte = Clock::now();
            }
            if (parser.status() == ResponseParser::Status::complete) break;
            if (parser.status() == ResponseParser::Status::error) {
                fail(result, ErrorKind::protocol, parser.error());
                co_return;
            }
        } else if (n == 0) {  // the server closed: fine if that is how the body ends
            if (parser.finish() == ResponseParser::Status::complete) break;
            fail(result, ErrorKind::receive, parser.error());
            co_return;
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            const Event event = co_yield Wait{socket.fd(), Interest::readable};
            if (event == Event::timed_out) {
                const bool answering = result.timing.first_byte != Clock::time_point{};
                fail(result, ErrorKind::timeout,
                     timeout_message(options.timeout, answering ? "receiving" : "waiting"));
                co_return;
            }
        } else {
            error = errno;  // ECONNRESET: the server reset the connection
            fail(result, kind_for_errno(error, ErrorKind::receive), errno_message("recv", error));
            co_return;
        }
    }
    result.response = parser.take_response();
    result.timing.done = Clock::now();
}

// ---- The loop: many fetches on one epoll instance ----
namespace {

// Runs the fetch generators of one fetch_all call. The whole scheduler is three moves: start a
// generator (next() runs it to its first wait), arm its wait in epoll, and when epoll or the clock
// says so, resume it with send(Event) and arm its next wait. Compare stage 04's EventLoop: there
// the loop called a callback that the request had registered; here it resumes the request itself.
//
// Invariant: between two epoll_wait calls, every fetch in flight is suspended at a co_yield, and
// the Wait it yielded is armed in epoll. (This loop is single-threaded: a fetch runs only inside
// next()/send(), which return at its next co_yield.)
class FetchLoop {
public:
    FetchLoop(const std::vector<Request>& requests, const Options& options, FetchOne fetch,
              std::vector<Result>& results, std::size_t concurrency, int epoll_fd)
        : requests_(requests), options_(options), fetch_(fetch), results_(results),
          epoll_fd_(epoll_fd), slots_(concurrency), events_(concurrency) {
        for (std::size_t slot = concurrency; slot-- > 0;) free_slots_.push_back(slot);
        timers_.reserve(requests.size());
    }

    void run() {
        start_more();
        while (in_flight_ > 0) {
            const int ready = epoll_wait(epoll_fd_, events_.data(),
                                         static_cast<int>(events_.size()), timeout_ms());
            if (ready < 0) {
                if (errno == EINTR) continue;  // interrupted by a signal handler: wait again
                throw std::system_error(errno, std::generic_category(), "epoll_wait");
            }
            // epoll_event.data holds the slot of the fetch that armed the descriptor. That is safe
            // because (1) a fetch has one descriptor in epoll at a time, and one epoll_wait reports
            // a descriptor at most once, so a batch has at most one event per fetch; (2) a fetch's
            // socket closes when it finishes, and the kernel drops a socket from epoll, pending
            // events included, when its last descriptor closes (this stage never duplicates one);
            // (3) freed slots are refilled only after the whole batch and the timers: an event
            // never reaches a different fetch, or a freed frame.
            // (EPOLLONESHOT, in arm, is not one of these reasons: what it adds is that a descriptor
            // stays quiet from its event until its fetch waits on it again.)
            for (int i = 0; i < ready; ++i) {
                resume(static_cast<std::size_t>(events_[i].data.u64), Event::ready);
            }
            expire_timers();
            start_more();
        }
    }

private:
    // One request in flight. Its whole state is in the generator's frame; the loop keeps only what
    // it needs to schedule it.
    struct InFlight {
        Fetch fetch;              // empty when the slot is free
        std::size_t request = 0;  // index into requests_ and results_
        int registered_fd = -1;   // the descriptor this fetch has added to epoll, or -1
    };

    // A deadline in a min-heap, nearest on top. A request that finishes early leaves its timer in
    // the heap; the timer is skipped when it comes to the top (asyncio cancels timers the same
    // way). `request` tells a live timer from one whose slot has moved on to another request.
    struct Timer {
        Clock::time_point deadline;
        std::size_t slot;
        std::size_t request;
        friend bool operator>(const Timer& a, const Timer& b) { return a.deadline > b.deadline; }
    };

    // Fills free slots with new requests. A generator that finishes without ever waiting (no
    // descriptor left: a `limit` error) gives its slot back at once, and the next request tries.
    void start_more() {
        while (!free_slots_.empty() && next_request_ < requests_.size()) {
            const std::size_t slot = free_slots_.back();
            free_slots_.pop_back();
            const std::size_t request = next_request_++;
            InFlight& in_flight = slots_[slot];
            in_flight.request = request;
            ++in_flight_;
            // Calling the coroutine allocates its frame, once per request; nothing runs yet.
            in_flight.fetch = fetch_(requests_[request], options_, results_[request]);
            const Clock::time_point deadline = deadline_after(Clock::now(), options_.timeout);
            if (!in_flight.fetch.next()) {  // runs the body up to its first wait
                complete(slot);
                continue;
            }
            timers_.push_back(Timer{deadline, slot, request});
            std::push_heap(timers_.begin(), timers_.end(), std::greater<>{});
            arm(slot);
        }
    }

    // Tells epoll what the fetch in `slot` is waiting for.
    //
    // One registration per descriptor: EPOLL_CTL_ADD the first time a fetch waits on a descriptor,
    // EPOLL_CTL_MOD (re-arm) for each later wait. With EPOLLONESHOT, once epoll_wait has reported
    // an event for the descriptor, the kernel disables it (no events at all, errors included)
    // until the next MOD: it stays quiet while its fetch runs, until the fetch waits on it again.
    //
    // One trap: the fetch owns its socket and may close it and open another (the next address).
    // The kernel drops the closed one from epoll by itself, and socket() hands out the lowest free
    // number, often the same one. MOD then fails with ENOENT: it is a new socket, so we ADD it.
    void arm(std::size_t slot) {
        InFlight& in_flight = slots_[slot];
        const Wait& wait = in_flight.fetch.current();
        epoll_event event{};
        event.events = (wait.interest == Interest::readable ? EPOLLIN : EPOLLOUT) | EPOLLONESHOT;
        event.data.u64 = slot;
        int rc = -1;
        if (wait.fd == in_flight.registered_fd) {
            rc = epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, wait.fd, &event);
            if (rc != 0 && errno == ENOENT) {
                rc = epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wait.fd, &event);
            }
        } else {
            rc = epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wait.fd, &event);
        }
        if (rc != 0) {
            abandon(slot, errno);
            return;
        }
        in_flight.registered_fd = wait.fd;
    }

    // Resumes the fetch in `slot` with what happened, then arms its next wait or completes it.
    void resume(std::size_t slot, Event event) {
        if (slots_[slot].fetch.send(event)) {
            arm(slot);
        } else {
            complete(slot);
        }
    }

    // Resumes, with Event::timed_out, every live fetch whose deadline has passed. The fetch knows
    // which phase it is in (it is a local of its frame: where it is suspended), so it writes its
    // own timeout result and returns, closing its socket on the way. The loop could instead
    // close() it, but then the loop would have to know the phase, and we would be back to keeping
    // per-request state outside the generator.
    void expire_timers() {
        const Clock::time_point now = Clock::now();
        while (!timers_.empty() && timers_.front().deadline <= now) {
            const Timer timer = timers_.front();
            std::pop_heap(timers_.begin(), timers_.end(), std::greater<>{});
            timers_.pop_back();
            if (is_live(timer)) resume(timer.slot, Event::timed_out);
        }
    }

    bool is_live(const Timer& timer) const {
        const InFlight& in_flight = slots_[timer.slot];
        return !in_flight.fetch.done() && in_flight.request == timer.request;
    }

    // How long epoll_wait may sleep: until the nearest live deadline, or forever if there is none.
    int timeout_ms() {
        while (!timers_.empty() && !is_live(timers_.front())) {
            std::pop_heap(timers_.begin(), timers_.end(), std::greater<>{});
            timers_.pop_back();
        }
        if (timers_.empty()) return -1;
        const Clock::duration left = timers_.front().deadline - Clock::now();
        if (left <= Clock::duration::zero()) return 0;
        // Rounded up: rounded down, we would wake a fraction of a millisecond early, find nothing
        // due, and call epoll_wait(0) again and again until the deadline: a busy loop.
        const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
        return static_cast<int>(std::min<decltype(ms)>(ms, INT_MAX));
    }

    // epoll refused the descriptor (ENOMEM, or ENOSPC: the per-user limit on watched descriptors).
    // The fetch cannot wait, so it cannot go on: destroy it where it is suspended, which runs its
    // locals' destructors and so closes its socket, and give the request a `limit` error.
    void abandon(std::size_t slot, int error) {
        InFlight& in_flight = slots_[slot];
        in_flight.fetch.close();
        fail(results_[in_flight.request], kind_for_errno(error, ErrorKind::limit),
             errno_message("epoll_ctl", error));
        complete(slot);
    }

    // The fetch in `slot` has finished: its result is final.
    void complete(std::size_t slot) {
        InFlight& in_flight = slots_[slot];
        in_flight.fetch = Fetch{};  // frees the frame; its locals (the socket) are already gone
        in_flight.registered_fd = -1;
        free_slots_.push_back(slot);
        --in_flight_;
        if (options_.on_result) options_.on_result(in_flight.request, results_[in_flight.request]);
    }

    const std::vector<Request>& requests_;
    const Options& options_;
    FetchOne fetch_;
    std::vector<Result>& results_;
    int epoll_fd_;
    std::vector<InFlight> slots_;        // one per request allowed in flight
    std::vector<std::size_t> free_slots_;
    std::vector<epoll_event> events_;    // one per slot: one epoll_wait can report every fetch
    std::vector<Timer> timers_;          // a min-heap (std::push_heap with std::greater)
    std::size_t next_request_ = 0;       // the first request not started yet
    std::size_t in_flight_ = 0;
};

}  // namespace

std::vector<Result> run_fetches(const std::vector<Request>& requests, const Options& options,
                                FetchOne fetch) {
    // Never resized: the fetches hold references into it.
    std::vector<Result> results(requests.size());
    if (requests.empty()) return results;

    const Descriptor epoll(epoll_create1(EPOLL_CLOEXEC));
    if (!epoll) {  // no descriptor for epoll itself: every request fails, the caller carries on
        const int error = errno;
        for (std::size_t i = 0; i < requests.size(); ++i) {
            fail(results[i], kind_for_errno(error, ErrorKind::limit),
                 errno_message("epoll_create1", error));
            if (options.on_result) options.on_result(i, results[i]);
        }
        return results;
    }

    const std::size_t concurrency =
        options.concurrency == 0 ? requests.size() : std::min(options.concurrency, requests.size());
    FetchLoop(requests, options, fetch, results, concurrency, epoll.fd()).run();
    return results;
}

std::vector<Result> fetch_all(const std::vector<Request>& requests, const Options& options) {
    return run_fetches(requests, options, &fetch_one);
}

// ---- Helpers ----

void fail(Result& result, ErrorKind kind, std::string message) {
    result.error = kind;
    result.error_message = std::move(message);
    result.timing.done = Clock::now();
}

int connect_error(int fd) {
    int error = 0;
    socklen_t length = sizeof error;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0) return errno;
    return error;
}

ssize_t receive_into(int fd, ResponseParser& parser) {
    char buffer[64 * 1024];
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n > 0) parser.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
    return n;
}

}  // namespace sixways::generators
