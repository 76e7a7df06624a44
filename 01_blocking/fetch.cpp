// Stage 01: blocking sockets, one request after another.
//
// The baseline that every later stage is measured against. In Python it fits in a few lines:
//
//     sock = socket.socket()
//     sock.connect((host, 80))
//     sock.send(request)
//     response = sock.recv(1024)
//
// and each of those lines blocks: the program stops until the kernel has an answer. That is also
// its whole cost. While one request waits for the server, nothing else happens, so N requests to a
// server that takes 100 ms to answer take N x 100 ms.
//
// The four lines above are also wrong in ways that matter on a real network, and this file fixes
// them without changing their shape:
//   1. One recv() is not a response. TCP delivers a stream of bytes, in pieces of whatever size the
//      network produces; a response ends where its framing says (Content-Length, chunked encoding,
//      or the server closing the connection). We feed every piece to a ResponseParser and stop as
//      soon as it says the response is complete.
//   2. Nothing bounds the wait. A server that never answers, or answers one byte a second, would
//      hold the program forever. Each request has a deadline, and every blocking call is allowed
//      only the time that is left before it.
//   3. send() may take only part of what it is given. We call it until all of it is sent.
//   4. send() to a peer that has closed its end raises SIGPIPE, whose default action ends the whole
//      program. We send with MSG_NOSIGNAL, and get an EPIPE error for that request instead.
//
// Stage 02 keeps this code as it is and runs many copies of it at once, one per thread.

#include "01_blocking/fetch.hpp"

#include <sys/socket.h>
#include <sys/time.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <string>
#include <utility>

#include "common/descriptor.hpp"

namespace sixways::blocking {

namespace {

// How a blocking call bounded by the deadline ended (failed: errno says why).
enum class Outcome { done, deadline_passed, failed };

Result fetch_one(const Request& request, const Options& options);
Outcome connect_before(int fd, const Address& address, Clock::time_point deadline);
bool limit_to_time_left(int fd, int option, Clock::time_point deadline);

}  // namespace

std::vector<Result> fetch_all(const std::vector<Request>& requests, const Options& options) {
    std::vector<Result> results;
    results.reserve(requests.size());
    for (std::size_t index = 0; index < requests.size(); ++index) {
        results.push_back(fetch_one(requests[index], options));
        if (options.on_result) options.on_result(index, results.back());
    }
    return results;
}

namespace {

// One request, from the first connect to the last byte of the response. Every call here blocks
// this thread until the kernel has something to report, or until the time left runs out.
Result fetch_one(const Request& request, const Options& options) {
    Result result;  // the response, or the error, at the end
    Timing& timing = result.timing;  // when each phase ended, filled in as the request goes
    // Clock (std::chrono::steady_clock), Duration and deadline_after: common/duration.hpp.
    timing.start = Clock::now();
    const Clock::time_point deadline = deadline_after(timing.start, options.timeout);
    // How the request ends early: `result` becomes final with the error, and is returned. A timeout
    // names the phase it interrupted, read from the times recorded so far ("while connecting").
    auto failed = [&](ErrorKind kind, std::string message) {
        result.fail(kind, std::move(message));
        // Moved out, not copied. Safe: every caller returns this at once, so it is the last use
        // of `result` on that path.
        return std::move(result);
    };
    auto timed_out = [&] {
        return failed(ErrorKind::timeout, timeout_message(options.timeout, phase_name(timing)));
    };

    // 1. Connect. A host name may resolve to several addresses ("localhost" is ::1 and 127.0.0.1);
    //    try each in turn until one accepts. One deadline covers all the attempts.
    if (request.addresses.empty()) {
        return failed(ErrorKind::resolve, "resolve: no address to connect to");
    }
    Descriptor socket;
    const char* failed_call = "connect";
    int error = 0;
    for (const Address& address : request.addresses) {
        Descriptor attempt(::socket(address.family(), SOCK_STREAM | SOCK_CLOEXEC, 0));
        if (!attempt) {  // e.g. EMFILE: this process has no descriptor left
            failed_call = "socket";
            error = errno;
            continue;
        }
        const Outcome outcome = connect_before(attempt.fd(), address, deadline);
        if (outcome == Outcome::done) {
            socket = std::move(attempt);
            break;
        }
        if (outcome == Outcome::deadline_passed) return timed_out();
        failed_call = "connect";  // e.g. ECONNREFUSED: nobody listens there; try the next address
        error = errno;
    }
    if (!socket) {
        // EMFILE, ENFILE or EADDRNOTAVAIL (no ephemeral port left) mean we ran out of something,
        // not that the server is unreachable: kind_for_errno calls those `limit`.
        return failed(kind_for_errno(error, ErrorKind::connect), errno_message(failed_call, error));
    }
    timing.connected = Clock::now();

    // 2. Send the request. send() returns how many bytes the kernel took, which can be fewer than
    //    we gave it (its send buffer was full); send the rest until none is left. MSG_NOSIGNAL: a
    //    server that has closed its end makes send() fail with EPIPE instead of killing the whole
    //    process with SIGPIPE.
    const std::string request_bytes = build_get_request(request.url);
    std::size_t sent = 0;
    while (sent < request_bytes.size()) {
        if (!limit_to_time_left(socket.fd(), SO_SNDTIMEO, deadline)) return timed_out();
        const ssize_t n = ::send(socket.fd(), request_bytes.data() + sent,
                                 request_bytes.size() - sent, MSG_NOSIGNAL);
        if (n < 0) {
            // A socket with a timeout is never restarted after a signal handler, even with
            // SA_RESTART; the call simply fails with EINTR, and we make it again.
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) return timed_out();
            return failed(kind_for_errno(errno, ErrorKind::send), errno_message("send", errno));
        }
        sent += static_cast<std::size_t>(n);
    }
    timing.sent = Clock::now();

    // 3. Receive until the response is complete. Each recv() returns what has arrived so far, from
    //    one byte to a full buffer, and blocks only while nothing has. We stop as soon as the parser
    //    has a complete response: a server may keep the connection open after answering, and
    //    waiting for it to close would wait until the deadline.
    //
    //    The time left is set again before every recv(). Setting the whole timeout once would bound
    //    each call, not the request: a server that sends one byte every second would keep every
    //    single call short and the request going forever.
    ResponseParser parser(options.body_cap, options.keep_headers);
    char buffer[16 * 1024];
    for (;;) {
        if (!limit_to_time_left(socket.fd(), SO_RCVTIMEO, deadline)) return timed_out();
        const ssize_t n = ::recv(socket.fd(), buffer, sizeof buffer, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) return timed_out();
            // ECONNRESET: the server reset the connection.
            return failed(kind_for_errno(errno, ErrorKind::receive), errno_message("recv", errno));
        }
        if (n == 0) {
            // The server closed the connection. That ends a response framed by the close, and
            // cuts short any other: "connection closed after 10 of 100 body bytes".
            if (parser.finish() == ResponseParser::Status::complete) break;
            return failed(ErrorKind::receive, parser.error());
        }
        if (timing.first_byte == Clock::time_point{}) timing.first_byte = Clock::now();
        const ResponseParser::Status status =
            parser.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
        if (status == ResponseParser::Status::complete) break;
        if (status == ResponseParser::Status::error) {
            return failed(ErrorKind::protocol, parser.error());
        }
    }
    timing.done = Clock::now();
    result.response = parser.take_response();
    return result;
    // `socket` closes here, as it does on every early return above.
}

// Connects the blocking socket `fd` to `address`, waiting no longer than `deadline`.
//
// A blocking connect() waits for the TCP handshake, and by default for as long as the kernel keeps
// retrying (over two minutes when nobody answers). On Linux the socket's send timeout, SO_SNDTIMEO,
// bounds that wait too (socket(7)): when it runs out, connect() fails with EINPROGRESS, meaning
// "still going on in the background". We then give up; closing the socket ends the handshake.
// The portable way is a non-blocking connect() followed by waiting for the socket to become
// writable, which is where stages 03 and 04 go.
Outcome connect_before(int fd, const Address& address, Clock::time_point deadline) {
    for (;;) {
        if (!limit_to_time_left(fd, SO_SNDTIMEO, deadline)) return Outcome::deadline_passed;
        if (::connect(fd, address.get(), address.length) == 0) return Outcome::done;
        // A signal interrupted the wait, not the handshake. Calling connect() again on a blocking
        // socket waits for the same handshake once more.
        if (errno == EINTR) continue;
        // The time ran out during the first call (EINPROGRESS) or during a repeated one (EALREADY).
        return errno == EINPROGRESS || errno == EALREADY ? Outcome::deadline_passed : Outcome::failed;
    }
}

// Allows the next blocking call on `fd` only the time left before `deadline`: SO_SNDTIMEO bounds
// connect() and send(), SO_RCVTIMEO bounds recv(). When such a call runs out of time it fails with
// EAGAIN (EINPROGRESS for connect). Returns false, and sets nothing, when no time is left.
bool limit_to_time_left(int fd, int option, Clock::time_point deadline) {
    const Duration left = deadline - Clock::now();
    if (left <= Duration::zero()) return false;
    // A timeout of zero means "wait forever", so what is left is rounded up, never down to zero.
    // (The kernel's timer is coarser: a few ms late on short waits, up to hundreds of ms on long.)
    const auto micros = std::chrono::ceil<std::chrono::microseconds>(left).count();
    const timeval limit{static_cast<time_t>(micros / 1'000'000),
                        static_cast<suseconds_t>(micros % 1'000'000)};
    // Cannot fail for an open socket and a timeval in range.
    ::setsockopt(fd, SOL_SOCKET, option, &limit, sizeof limit);
    return true;
}

}  // namespace

}  // namespace sixways::blocking
