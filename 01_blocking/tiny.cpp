// 01_tiny: the whole idea of stage 01 in one file, read top to bottom.
//
// Connect, send, receive, one request after another. Each of these calls blocks: the thread stops
// until the kernel has an answer. While one request waits for the server, nothing else happens,
// so N requests to a server that answers in 100 ms take N x 100 ms. Stage 02 runs this same fetch
// on a thread per request.
//
// It is correct where it matters. One recv() is not a response: TCP delivers a stream of bytes in
// pieces of any size, and a response ends where its framing says, so every piece goes to common's
// ResponseParser until it says the response is complete. Every socket is closed, on every way
// out. A call that fails is that request's error, and the next request goes on.
//
// It leaves out, on purpose, what fetch.cpp adds: a deadline (here a server that never answers is
// waited for until Ctrl-C), and the other addresses of a name ("localhost" is ::1 and 127.0.0.1;
// this tries the first one only).
#include "01_blocking/tiny.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <string>

#include "common/descriptor.hpp"

namespace sixways::blocking::tiny {

// A failed system call is that request's error: `limit` if something ran out (EMFILE: no
// descriptor left, ...), else `otherwise`, with what failed and why ("connect: Connection
// refused"). Result::fail also sets timing.done.
Result failed(Result& result, ErrorKind otherwise, const char* call, int error) {
    result.fail(kind_for_errno(error, otherwise), errno_message(call, error));
    return result;
}

// One request, top to bottom. The socket closes itself (common/descriptor.hpp) at every return.
Result fetch(const Request& request, const Options& options) {
    Result result;
    Timing& timing = result.timing;  // when each phase ended: the report's latency and --trace
    timing.start = Clock::now();

    // 1. Connect to the first address; connect() returns when the handshake is over. (The command
    //    line resolved the name, once for every request, and sends none if it found no address.)
    const Address& address = request.addresses.at(0);
    const Descriptor socket(::socket(address.family(), SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!socket) return failed(result, ErrorKind::connect, "socket", errno);
    const int connected = ::connect(socket.fd(), address.get(), address.length);
    if (connected != 0) return failed(result, ErrorKind::connect, "connect", errno);
    timing.connected = Clock::now();

    // 2. Send the whole request. send() may take only part of it; the rest goes in the next call.
    //    MSG_NOSIGNAL: a server that has closed its end makes send() fail with EPIPE, instead of
    //    ending the whole program with SIGPIPE.
    const std::string bytes = build_get_request(request.url);
    for (std::size_t sent = 0; sent < bytes.size();) {
        const ssize_t n = ::send(socket.fd(), &bytes[sent], bytes.size() - sent, MSG_NOSIGNAL);
        if (n < 0) return failed(result, ErrorKind::send, "send", errno);
        sent += static_cast<std::size_t>(n);
    }
    timing.sent = Clock::now();

    // 3. Receive until the parser says the response is complete (a server may keep the connection
    //    open after answering). recv() returns what has arrived so far, or 0 once the server has
    //    closed the connection: that completes a body framed by the close, and cuts any other
    //    short ("connection closed after 10 of 100 body bytes"), a `receive` error. Bytes that
    //    are not HTTP are a `protocol` error.
    using Status = ResponseParser::Status;
    ResponseParser parser(options.body_cap, options.keep_headers);
    char buffer[16 * 1024];
    for (;;) {
        const ssize_t n = ::recv(socket.fd(), buffer, sizeof buffer, 0);
        if (n < 0) return failed(result, ErrorKind::receive, "recv", errno);
        if (n > 0 && timing.first_byte == Clock::time_point{}) timing.first_byte = Clock::now();
        const Status status = n == 0 ? parser.finish() : parser.feed({buffer, std::size_t(n)});
        if (status == Status::complete) break;
        if (status == Status::error) {
            result.fail(n == 0 ? ErrorKind::receive : ErrorKind::protocol, parser.error());
            return result;
        }
    }
    result.response = parser.take_response();
    timing.done = Clock::now();
    return result;
}

// One request after another: the next starts when the last has its result.
std::vector<Result> fetch_all(const std::vector<Request>& requests, const Options& options) {
    std::vector<Result> results;
    for (std::size_t index = 0; index < requests.size(); ++index) {
        results.push_back(fetch(requests[index], options));
        if (options.on_result) options.on_result(index, results.back());
    }
    return results;
}

}  // namespace sixways::blocking::tiny
