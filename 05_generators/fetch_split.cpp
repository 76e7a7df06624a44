// The limit of generators: the fetch of fetch.cpp, split into three sub-generators.
//
// Good code is made of small functions: connect, send_all, receive. With plain functions, or with
// stage 06's coroutines, the fetch would read
//
//     Descriptor socket = co_await connect_to_any(request.addresses);
//     co_await send_all(socket, build_get_request(request.url));
//     result.response = co_await receive_response(socket);
//
// With generators it cannot. A co_yield suspends only the coroutine whose body it is written in, so
// a sub-generator's waits do not reach the loop by themselves: the outer generator must drive it
// and pass every wait up and every event down, by hand:
//
//     sub.next();
//     while (!sub.done()) {
//         const Event event = co_yield sub.current();  // up to the loop
//         sub.send(event);                             // down to the sub-generator
//     }
//
// That loop is "yield from" (Python added it to the language, PEP 380, for exactly this). Written
// once as a function, it saves nothing: a function that contains co_yield is a generator of its own,
// and its caller needs the same loop around it. So it is written out at every call site, and:
// - Every level must re-yield by hand. Split receive into read_headers and read_body and
//   receive_response needs two such loops of its own; each event now resumes every level in turn.
// - A value comes back only after that loop. generator.hpp's Generator has no return value (stage
//   05 writes results into the request's slot), so the socket comes back through an out-parameter;
//   with one (tiny.cpp's has), the caller would read sub.result() after the loop, not instead of it.
// - Exceptions and cancellation cross each level only because each loop passes them on: an
//   exception in a sub-generator reaches us because our Generator::send rethrows it; a timeout
//   reaches the sub-generator only because we send it every event unchanged. A level that looked
//   at the event itself would have to forward the timeout, or close() the sub-generator and make
//   up its result, knowing its phase.
// Stage 06 fixes exactly this: `co_await` on a coroutine runs it in the caller's task, a wait
// suspends the whole chain, only the innermost coroutine is resumed when the wait is over, and each
// callee hands its return value or exception to its caller as it finishes.
//
// The loop runs this version with `05_generators --split`; a test checks that it gives the same
// results as fetch_one.
#include <sys/socket.h>

#include <cerrno>
#include <cstddef>
#include <string>

#include "05_generators/fetch.hpp"
#include "common/explain.hpp"
#include "common/http.hpp"

namespace sixways::generators {

namespace {

// Connects to one of request.addresses. On success `socket` holds the connected socket; on failure
// `result` holds the error. (A return value would spare the out-parameter, not the caller's loop.)
Fetch connect_to_any(const Request& request, const Options& options, Result& result,
                     Descriptor& socket) {
    const char* failed_call = "connect";
    int error = 0;
    if (request.addresses.empty()) {
        result.fail(ErrorKind::resolve, "resolve: no address to connect to");
        co_return;
    }
    for (const Address& address : request.addresses) {
        socket =
            Descriptor(::socket(address.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
        if (!socket) {
            failed_call = "socket";
            error = errno;
            continue;
        }
        const int connected = ::connect(socket.fd(), address.get(), address.length);
        explain::call("connect", socket.fd(), connected);
        if (connected == 0) break;
        failed_call = "connect";
        error = errno;
        if (error == EINPROGRESS) {
            const Event event = co_yield Wait{socket.fd(), Interest::writable};
            if (event == Event::timed_out) {
                result.fail(ErrorKind::timeout, timeout_message(options.timeout, "connecting"));
                co_return;
            }
            error = connect_error(socket.fd());
            if (error == 0) break;
        }
        socket.close();
    }
    if (!socket) {
        result.fail(kind_for_errno(error, ErrorKind::connect), errno_message(failed_call, error));
        co_return;
    }
    result.timing.connected = Clock::now();
}

// Sends all of `text`. On failure `result` holds the error. The references are safe because the
// caller drives this generator to its end while `text` is alive in the caller's frame.
Fetch send_all(int fd, const std::string& text, const Options& options, Result& result) {
    std::size_t sent = 0;
    while (sent < text.size()) {
        const ssize_t n = ::send(fd, text.data() + sent, text.size() - sent, MSG_NOSIGNAL);
        explain::call("send", fd, n);
        if (n >= 0) {
            sent += static_cast<std::size_t>(n);
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            const Event event = co_yield Wait{fd, Interest::writable};
            if (event == Event::timed_out) {
                result.fail(ErrorKind::timeout, timeout_message(options.timeout, "sending"));
                co_return;
            }
        } else {
            const int error = errno;
            result.fail(kind_for_errno(error, ErrorKind::send), errno_message("send", error));
            co_return;
        }
    }
    result.timing.sent = Clock::now();
}

// Receives the response into result.response, or the error into `result`.
Fetch receive_response(int fd, const Options& options, Result& result) {
    ResponseParser parser(options.body_cap, options.keep_headers);
    for (;;) {
        const ssize_t n = receive_into(fd, parser);
        if (n > 0) {
            if (result.timing.first_byte == Clock::time_point{}) result.timing.first_byte = Clock::now();
            if (parser.status() == ResponseParser::Status::complete) break;
            if (parser.status() == ResponseParser::Status::error) {
                result.fail(ErrorKind::protocol, parser.error());
                co_return;
            }
        } else if (n == 0) {
            if (parser.finish() == ResponseParser::Status::complete) break;
            result.fail(ErrorKind::receive, parser.error());
            co_return;
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            const Event event = co_yield Wait{fd, Interest::readable};
            if (event == Event::timed_out) {
                const char* phase = phase_name(result.timing);  // "waiting" or "receiving"
                result.fail(ErrorKind::timeout, timeout_message(options.timeout, phase));
                co_return;
            }
        } else {
            const int error = errno;
            result.fail(kind_for_errno(error, ErrorKind::receive), errno_message("recv", error));
            co_return;
        }
    }
    result.response = parser.take_response();
    result.timing.done = Clock::now();
}

}  // namespace

// The outer generator: three calls, each wrapped in the same hand-written "yield from" loop.
Fetch fetch_one_split(const Request& request, const Options& options, Result& result) {
    result.timing.start = Clock::now();

    Descriptor socket;  // filled in by connect_to_any: a side channel
    Fetch connecting = connect_to_any(request, options, result, socket);
    connecting.next();
    while (!connecting.done()) {
        const Event event = co_yield connecting.current();
        connecting.send(event);
    }
    if (!result.ok()) co_return;  // the sub-generator's outcome, read from the side channel

    const std::string request_bytes = build_get_request(request.url);
    Fetch sending = send_all(socket.fd(), request_bytes, options, result);
    sending.next();
    while (!sending.done()) {
        const Event event = co_yield sending.current();
        sending.send(event);
    }
    if (!result.ok()) co_return;

    Fetch receiving = receive_response(socket.fd(), options, result);
    receiving.next();
    while (!receiving.done()) {
        const Event event = co_yield receiving.current();
        receiving.send(event);
    }
}

}  // namespace sixways::generators
