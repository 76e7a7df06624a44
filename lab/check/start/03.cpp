// Stage 03, written by you: non-blocking sockets, and one loop that asks every request, over and
// over, whether it can go on.
//
// Check it with `lab/check.sh 03 mine/03.cpp`; write until every line says [ok]. This file takes
// the place of 03_nonblocking/tiny.cpp: the same fetch_all (declared in 03_nonblocking/tiny.hpp),
// built with the same main. Chapter 03 explains each step; 03_nonblocking/tiny.cpp is one answer.
//
// As given, it compiles and every request fails with "not written yet". Fill in the places marked
// WRITE.
#include "03_nonblocking/tiny.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <string>
#include <utility>

#include "common/descriptor.hpp"

namespace sixways::nonblocking::tiny {

// Everything one request needs between two visits of the loop (in stage 01, fetch's locals), and
// its steps, each of which returns as soon as a call would have to wait (EINPROGRESS, EALREADY,
// EAGAIN), to go on at a later visit.
struct Connection {
    enum class Phase { not_started, connecting, sending, receiving, finished };

    Connection(const Request& request, const Options& options)
        : address(request.addresses.at(0)), bytes(build_get_request(request.url)),
          parser(options.body_cap, options.keep_headers) {}

    const Address& address;  // the first one only
    std::string bytes;       // the request to send, of which `sent` are sent
    ResponseParser parser;
    Result result;           // its timing fills in as the request goes; the response or the error
    Phase phase = Phase::not_started;
    Descriptor socket;
    std::size_t sent = 0;

    // 1. Set result.timing.start, open a socket that never blocks (SOCK_NONBLOCK), and start
    //    connecting: connect() returns at once, almost always with EINPROGRESS. Phase: connecting.
    void start() {
        result.timing.start = Clock::now();
        // WRITE. Then remove this line:
        fail(ErrorKind::connect, "not written yet", 0);
    }

    // Has the handshake ended? Ask with connect() again: EALREADY means not yet; 0 or EISCONN,
    // connected (set result.timing.connected, phase: sending); any other errno, how it failed.
    void check_connected() {
        // WRITE
    }

    // 2. Send what the kernel takes; EAGAIN means its buffer is full: the rest on a later visit.
    //    Use MSG_NOSIGNAL. All sent: result.timing.sent, phase: receiving.
    void try_send() {
        // WRITE
    }

    // 3. Receive until recv() says there is nothing more for now (EAGAIN), feeding each piece to
    //    the parser, as in stage 01. Complete: result.response = parser.take_response(),
    //    result.timing.done, phase: finished.
    void try_receive() {
        // WRITE
    }

    // A failed system call is this request's error: `limit` if something ran out, else `otherwise`.
    // (The starting file calls it with error 0 for "not written yet".)
    void fail(ErrorKind otherwise, const char* call, int error) {
        result.fail(kind_for_errno(error, otherwise), error == 0 ? call : errno_message(call, error));
        phase = Phase::finished;
    }
};

// Every request at once, and round and round until each one has its result. On each pass, visit
// every request that has not finished: it goes as far as it can without waiting (a phase that ends
// goes on to the next in the same visit). When one finishes, close its socket now and tell
// options.on_result(index, result).
std::vector<Result> fetch_all(const std::vector<Request>& requests, const Options& options) {
    std::vector<Connection> connections;
    for (const Request& request : requests) connections.emplace_back(request, options);
    // WRITE the loop. Then remove this one, which starts each request once and gives up.
    for (std::size_t index = 0; index < connections.size(); ++index) {
        connections[index].start();
        if (options.on_result) options.on_result(index, connections[index].result);
    }
    std::vector<Result> results;
    for (Connection& connection : connections) results.push_back(std::move(connection.result));
    return results;
}

}  // namespace sixways::nonblocking::tiny
