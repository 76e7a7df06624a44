// Stage 05: generators. Read fetch_one first: it is stage 01's blocking fetch with a co_yield at
// every place where stage 01 blocked. Then the loop that runs many of them (FetchLoop), then the
// small helpers. fetch_split.cpp shows what goes wrong when the fetch is split into pieces.
#include "05_generators/fetch.hpp"

#include <sys/epoll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "common/explain.hpp"
#include "common/http.hpp"

namespace sixways::generators {

// ---- The lesson: one request, top to bottom ----
//
// Every local below (the socket, how much was sent, the parser) lives in this coroutine's frame,
// allocated once when fetch_one() is called. Stage 04 kept the same things in a per-request object,
// and what came next was whichever callback it had registered last; here the place where the body
// is suspended says what comes next, and the compiler keeps it.
//
// The result is written into `result` (a slot in fetch_all's vector) rather than yielded at the
// end. Yielding it would make the yield type a Wait-or-Result, the loop would have to tell them
// apart on every resume, and the generator would still have to be resumed once more to finish.
// With the slot, the rule is simple: when the generator is done, its result is final.
Fetch fetch_one(const Request& request, const Options& options, Result& result) {
    Timing& timing = result.timing;  // when each phase ended, filled in as the request goes
    timing.start = Clock::now();

    // 1. Connect, trying each resolved address in turn. A non-blocking connect() returns at once
    //    with EINPROGRESS; the socket turns writable when the handshake has ended, either way, and
    //    SO_ERROR then says how it ended.
    if (request.addresses.empty()) {
        result.fail(ErrorKind::resolve, "resolve: no address to connect to");
        co_return;
    }
    Descriptor socket;
    const char* failed_call = "connect";  // which call failed for the last address tried,
    int error = 0;                        // and with which errno
    for (const Address& address : request.addresses) {
        Descriptor attempt(
            ::socket(address.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
        if (!attempt) {  // e.g. EMFILE (no descriptor left), EAFNOSUPPORT (no IPv6 on this machine)
            failed_call = "socket";
            error = errno;
            continue;
        }
        error = ::connect(attempt.fd(), address.get(), address.length) == 0 ? 0 : errno;
        explain::call("connect", attempt.fd(), error == 0 ? 0 : -1);
        if (error == EINPROGRESS) {
            const Event event = co_yield Wait{attempt.fd(), Interest::writable};
            if (event == Event::timed_out) {
                result.fail(ErrorKind::timeout, timeout_message(options.timeout, "connecting"));
                co_return;  // `attempt` closes as the body ends
            }
            error = connect_error(attempt.fd());
        }
        if (error == 0) {
            socket = std::move(attempt);
            break;
        }
        failed_call = "connect";  // e.g. ECONNREFUSED: nobody listens there; try the next address
    }
    if (!socket) {
        // EMFILE, ENFILE or EADDRNOTAVAIL (no ephemeral port left) mean we ran out of something,
        // not that the server is unreachable: kind_for_errno calls those `limit`.
        result.fail(kind_for_errno(error, ErrorKind::connect), errno_message(failed_call, error));
        co_return;
    }
    timing.connected = Clock::now();

    // 2. Send the request. send() may take only part of it when the socket's buffer is full; then
    //    wait until it is writable again and send the rest. MSG_NOSIGNAL: a peer that has closed
    //    gives EPIPE instead of killing the process with SIGPIPE.
    const std::string request_bytes = build_get_request(request.url);
    std::size_t sent = 0;
    while (sent < request_bytes.size()) {
        const ssize_t n = ::send(socket.fd(), request_bytes.data() + sent,
                                 request_bytes.size() - sent, MSG_NOSIGNAL);
        explain::call("send", socket.fd(), n);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                const Event event = co_yield Wait{socket.fd(), Interest::writable};
                if (event == Event::timed_out) {
                    result.fail(ErrorKind::timeout, timeout_message(options.timeout, "sending"));
                    co_return;
                }
                continue;
            }
            result.fail(kind_for_errno(errno, ErrorKind::send), errno_message("send", errno));
            co_return;
        }
        sent += static_cast<std::size_t>(n);
    }
    timing.sent = Clock::now();

    // 3. Receive until the parser says the response is complete, or the server closes. Read
    //    until recv() says EAGAIN (nothing more for now), and only then wait: epoll reports
    //    readiness, not amounts, so we take everything that is there each time we are resumed.
    ResponseParser parser(options.body_cap, options.keep_headers);
    for (;;) {
        const ssize_t n = receive_into(socket.fd(), parser);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                const Event event = co_yield Wait{socket.fd(), Interest::readable};
                if (event == Event::timed_out) {
                    const char* phase = phase_name(timing);  // "waiting" or "receiving"
                    result.fail(ErrorKind::timeout, timeout_message(options.timeout, phase));
                    co_return;
                }
                continue;
            }
            // ECONNRESET: the server reset the connection.
            result.fail(kind_for_errno(errno, ErrorKind::receive), errno_message("recv", errno));
            co_return;
        }
        if (n == 0) {
            // The server closed the connection. That ends a response framed by the close, and
            // cuts short any other: "connection closed after 10 of 100 body bytes".
            if (parser.finish() == ResponseParser::Status::complete) break;
            result.fail(ErrorKind::receive, parser.error());
            co_return;
        }
        if (timing.first_byte == Clock::time_point{}) timing.first_byte = Clock::now();
        if (parser.status() == ResponseParser::Status::complete) break;
        if (parser.status() == ResponseParser::Status::error) {
            result.fail(ErrorKind::protocol, parser.error());
            co_return;
        }
    }
    timing.done = Clock::now();
    result.response = parser.take_response();
    // `socket` closes here, as it does at every co_return above.
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
          epoll_fd_(epoll_fd), concurrency_(concurrency), fetches_(requests.size()),
          events_(concurrency) {}

    void run() {
        start_more();
        while (in_flight_ > 0) {
            const int ready = epoll_wait(epoll_fd_, events_.data(),
                                         static_cast<int>(events_.size()), timeout_ms());
            explain::woke(ready);
            if (ready < 0) {
                if (errno == EINTR) continue;  // interrupted by a signal handler: wait again
                throw std::system_error(errno, std::generic_category(), "epoll_wait");
            }
            // epoll_event.data holds the index of the request whose fetch armed the descriptor.
            // That is safe because (1) a fetch has one descriptor in epoll at a time, and one
            // epoll_wait reports a descriptor at most once, so a batch has at most one event per
            // fetch; (2) a fetch's socket closes when it finishes, and the kernel drops a socket
            // from epoll, pending events included, when its last descriptor closes (this stage
            // never duplicates one); (3) each request has its own index, never reused: an event
            // never reaches a different fetch, or a freed frame.
            for (int i = 0; i < ready; ++i) {
                resume(static_cast<std::size_t>(events_[i].data.u64), Event::ready);
            }
            expire_timers();
            start_more();
        }
    }

private:
    // One request's fetch. Its whole state is in the generator's frame; the loop keeps only what
    // it needs to schedule it.
    struct InFlight {
        Fetch fetch;             // empty before the request starts and after it finishes
        int registered_fd = -1;  // the descriptor this fetch has added to epoll, or -1
    };

    // Starts requests while fewer than `concurrency_` are in flight. A generator that finishes
    // without ever waiting (no descriptor left: a `limit` error) is complete at once, and the next
    // request tries.
    void start_more() {
        while (in_flight_ < concurrency_ && next_request_ < requests_.size()) {
            const std::size_t request = next_request_++;
            ++in_flight_;
            // Calling the coroutine allocates its frame, once per request; nothing runs yet.
            Fetch& fetch = fetches_[request].fetch;
            fetch = fetch_(requests_[request], options_, results_[request]);
            if (!fetch.next()) {  // runs the body up to its first wait
                complete(request);
                continue;
            }
            arm(request);
        }
    }

    // Tells epoll what the fetch of `request` is waiting for.
    //
    // One registration per descriptor: EPOLL_CTL_ADD the first time a fetch waits on a descriptor,
    // EPOLL_CTL_MOD for each later wait, which sets the interest to what this wait asks for. So a
    // registration always asks for what its suspended fetch waits for, and a fetch yields a wait
    // only after a call said "not yet" (EINPROGRESS, EAGAIN): epoll reports the descriptor only
    // when its fetch can go on.
    //
    // One trap: the fetch owns its socket and may close it and open another (the next address).
    // The kernel drops the closed one from epoll by itself, and socket() hands out the lowest free
    // number, often the same one. MOD then fails with ENOENT: it is a new socket, so we ADD it.
    // That is also why a wait just like the last one still costs a MOD: the number alone does not
    // say whether it still names the same socket.
    void arm(std::size_t request) {
        InFlight& in_flight = fetches_[request];
        const Wait& wait = in_flight.fetch.current();
        explain::yields(request, wait.fd, wait.interest == Interest::writable);
        epoll_event event{};
        event.events = wait.interest == Interest::readable ? EPOLLIN : EPOLLOUT;
        event.data.u64 = request;
        const bool known = wait.fd == in_flight.registered_fd;
        int rc = epoll_ctl(epoll_fd_, known ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, wait.fd, &event);
        if (rc != 0 && known && errno == ENOENT) {
            rc = epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wait.fd, &event);
        }
        if (rc != 0) {
            // epoll refused the descriptor (ENOMEM, or ENOSPC: the per-user limit on watched
            // descriptors). The fetch cannot wait, so it cannot go on: destroy it where it is
            // suspended, which runs its locals' destructors and so closes its socket, and give the
            // request a `limit` error. (errno first: the destructors may change it.)
            const int error = errno;
            in_flight.fetch.close();
            results_[request].fail(kind_for_errno(error, ErrorKind::limit),
                                   errno_message("epoll_ctl", error));
            complete(request);
            return;
        }
        in_flight.registered_fd = wait.fd;
    }

    // Resumes the fetch of `request` with what happened, then arms its next wait or completes it.
    void resume(std::size_t request, Event event) {
        explain::resumes(request, event == Event::timed_out);
        if (fetches_[request].fetch.send(event)) {
            arm(request);
        } else {
            complete(request);
        }
    }

    // A request's deadline counts from the start time its fetch recorded (before its first wait),
    // so that both come from one clock reading.
    //
    // Deadlines need no heap here. Requests start in index order, each records its start time as
    // it starts, and all share one timeout: so their deadlines come in index order too, and the
    // nearest deadline is that of the oldest request still running. `oldest_` walks forward over
    // the requests that have finished (asyncio leaves cancelled timers in its heap the same way,
    // and drops them when they come to the top).
    Clock::time_point deadline(std::size_t request) const {
        return deadline_after(results_[request].timing.start, options_.timeout);
    }

    // Resumes, with Event::timed_out, every fetch still running whose deadline has passed. The
    // fetch knows which phase it is in (it is a local of its frame: where it is suspended), so it
    // writes its own timeout result and returns, closing its socket on the way.
    void expire_timers() {
        const Clock::time_point now = Clock::now();
        while (oldest_ < next_request_ && deadline(oldest_) <= now) {
            if (!fetches_[oldest_].fetch.done()) resume(oldest_, Event::timed_out);
            ++oldest_;
        }
    }

    // How long epoll_wait may sleep: until the nearest deadline of a fetch still running, or
    // forever if there is none. milliseconds_until rounds up: rounded down, we would wake a
    // fraction of a millisecond early, find nothing due, and call epoll_wait(0) again and again
    // until the deadline: a busy loop.
    int timeout_ms() {
        while (oldest_ < next_request_ && fetches_[oldest_].fetch.done()) ++oldest_;
        if (oldest_ == next_request_) return -1;
        return milliseconds_until(Clock::now(), deadline(oldest_));
    }

    // The fetch of `request` has finished: its result is final.
    void complete(std::size_t request) {
        explain::generator_done(request);
        fetches_[request].fetch = Fetch{};  // frees the frame; its locals (the socket) are gone
        --in_flight_;
        if (options_.on_result) options_.on_result(request, results_[request]);
    }

    const std::vector<Request>& requests_;
    const Options& options_;
    FetchOne fetch_;
    std::vector<Result>& results_;
    int epoll_fd_;
    std::size_t concurrency_;           // at most this many fetches in flight
    std::vector<InFlight> fetches_;     // by request index
    std::vector<epoll_event> events_;   // one per fetch in flight: one epoll_wait can report all
    std::size_t next_request_ = 0;      // the first request not started yet
    std::size_t oldest_ = 0;            // requests before it have finished, or timed out
    std::size_t in_flight_ = 0;
};

}  // namespace

std::vector<Result> run_fetches(const std::vector<Request>& requests, const Options& options,
                                FetchOne fetch) {
    // Never resized: the fetches hold references into it.
    std::vector<Result> results(requests.size());

    const Descriptor epoll(epoll_create1(EPOLL_CLOEXEC));
    // No descriptor for epoll itself: every request fails with `limit` (the command line says so).
    if (!epoll) throw std::system_error(errno, std::generic_category(), "epoll_create1");

    const std::size_t concurrency =
        options.concurrency == 0 ? requests.size() : std::min(options.concurrency, requests.size());
    FetchLoop(requests, options, fetch, results, concurrency, epoll.fd()).run();
    return results;
}

std::vector<Result> fetch_all(const std::vector<Request>& requests, const Options& options) {
    return run_fetches(requests, options, &fetch_one);
}

// ---- Helpers ----

ssize_t receive_into(int fd, ResponseParser& parser) {
    char buffer[64 * 1024];
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    explain::call("recv", fd, n);
    if (n > 0) parser.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
    return n;
}

}  // namespace sixways::generators
