// Stage 01, written by you: blocking sockets, one request after another.
//
// Check it with `lab/check.sh 01 mine/01.cpp`; write until every line says [ok]. This file takes
// the place of 01_blocking/tiny.cpp: the same fetch_all (declared in 01_blocking/tiny.hpp), built
// with the same main. Chapter 01 explains each step; 01_blocking/tiny.cpp is one answer.
//
// As given, it compiles and every request fails with "not written yet". Fill in the places marked
// WRITE.
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

// One request, top to bottom.
Result fetch(const Request& request, const Options& options) {
    Result result;
    Timing& timing = result.timing;  // when each phase ended: the report's latency and --trace
    timing.start = Clock::now();

    // 1. Connect to request.addresses.at(0) (an Address: family(), get(), length). Make the socket
    //    a Descriptor (common/descriptor.hpp), which closes it at every return. On failure:
    //    return failed(result, ErrorKind::connect, "connect", errno). Then set timing.connected.
    // WRITE

    // 2. Send build_get_request(request.url), all of it: send() may take only part. Use the flag
    //    MSG_NOSIGNAL, so that a server that has closed gives EPIPE instead of killing the
    //    program. Then set timing.sent.
    // WRITE

    // 3. Receive until the response is complete. Feed each piece recv() returns to a
    //    ResponseParser parser(options.body_cap, options.keep_headers): feed() returns need_more,
    //    complete or error. recv() returning 0 means the server has closed: call parser.finish().
    //    An error after the close is ErrorKind::receive, one in the bytes ErrorKind::protocol
    //    (the message is parser.error()). Set timing.first_byte at the first byte; at the end
    //    result.response = parser.take_response() and timing.done.
    // WRITE
    // Remove these four lines once the three steps above are written:
    (void)request;
    (void)options;
    result.fail(ErrorKind::connect, "not written yet");
    return result;
}

// One request after another: the next starts when the last has its result. Tell
// options.on_result(index, result), when it is set, as each one ends.
std::vector<Result> fetch_all(const std::vector<Request>& requests, const Options& options) {
    std::vector<Result> results;
    for (std::size_t index = 0; index < requests.size(); ++index) {
        results.push_back(fetch(requests[index], options));
        if (options.on_result) options.on_result(index, results.back());
    }
    return results;
}

}  // namespace sixways::blocking::tiny
