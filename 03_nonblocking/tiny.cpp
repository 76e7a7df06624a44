// 03_tiny: the whole idea of stage 03 in one file, read top to bottom.
//
// 02_tiny waited for many servers at once with a thread each. Here one thread runs every request,
// so no call may block it. A socket opened with SOCK_NONBLOCK never makes its caller wait: when
// connect() cannot finish at once it returns EINPROGRESS and the handshake goes on in the
// background; when send() finds no room, or recv() nothing to read, they fail with EAGAIN. The
// thread is then free to look at another socket.
//
// So the loop in fetch_all asks every request, again and again, "can you go on?". Nothing tells
// it which socket has news, so it asks them all, and it never sleeps: while the server thinks, it
// spins through calls whose answer is "not yet", on all the CPU time the machine gives it (on an
// idle machine, a whole core: compare the report's cpu time with its wall time). Stage 04 sleeps
// instead, until epoll says which sockets are ready.
//
// A request can no longer keep its state in local variables, as 01_tiny's fetch did: the loop
// leaves it after every question and must find it again on the next pass. So it lives in a
// Connection, with a phase that says how far it has got. Its steps are 01_tiny's three (connect,
// send, receive), each cut off where it would have blocked, to go on at a later visit.
//
// It leaves out, on purpose, what fetch.cpp adds: a deadline (here a server that never answers is
// waited for until Ctrl-C), the other addresses of a name, and a limit on the requests in flight.
#include "03_nonblocking/tiny.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <string>
#include <utility>

#include "common/descriptor.hpp"

namespace sixways::nonblocking::tiny {

// Everything one request needs between two visits of the loop (in 01_tiny, fetch's locals), and
// its steps, each of which returns as soon as a call would have to wait.
struct Connection {
    enum class Phase { not_started, connecting, sending, receiving, finished };

    Connection(const Request& request, const Options& options)
        : address(request.addresses.at(0)), bytes(build_get_request(request.url)),
          parser(options.body_cap, options.keep_headers) {}

    const Address& address;  // the first one only
    std::string bytes;  // the request to send, of which `sent` are sent
    ResponseParser parser;
    Result result;  // its timing fills in as the request goes; the response or the error at the end
    Phase phase = Phase::not_started;
    Descriptor socket;
    std::size_t sent = 0;

    // 1. Start connecting. connect() returns at once, almost always with EINPROGRESS: the
    //    handshake has begun, and check_connected finds out later how it ends.
    void start() {
        result.timing.start = Clock::now();
        phase = Phase::connecting;
        const int type = SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC;  // SOCK_NONBLOCK: the lesson
        socket = Descriptor(::socket(address.family(), type, 0));
        if (!socket) return fail(ErrorKind::connect, "socket", errno);
        const int connected = ::connect(socket.fd(), address.get(), address.length);
        if (connected != 0 && errno != EINPROGRESS) fail(ErrorKind::connect, "connect", errno);
    }

    // Has the handshake ended, and how? Nothing tells us, so we ask, with connect() again: EALREADY
    // means not yet; 0 or EISCONN, connected; anything else is how it failed (ECONNREFUSED, ...).
    void check_connected() {
        const int connected = ::connect(socket.fd(), address.get(), address.length);
        if (connected != 0 && errno == EALREADY) return;  // not yet: ask again on the next pass
        if (connected != 0 && errno != EISCONN) return fail(ErrorKind::connect, "connect", errno);
        result.timing.connected = Clock::now();
        phase = Phase::sending;
    }

    // 2. Send what the kernel takes. EAGAIN: its buffer is full; the rest waits for a later pass.
    void try_send() {
        while (sent < bytes.size()) {
            const ssize_t n = ::send(socket.fd(), &bytes[sent], bytes.size() - sent, MSG_NOSIGNAL);
            if (n < 0 && errno == EAGAIN) return;
            if (n < 0) return fail(ErrorKind::send, "send", errno);
            sent += static_cast<std::size_t>(n);
        }
        result.timing.sent = Clock::now();
        phase = Phase::receiving;
    }

    // 3. Receive, as 01_tiny does, until recv() says there is nothing more for now (EAGAIN).
    void try_receive() {
        using Status = ResponseParser::Status;
        Timing& timing = result.timing;
        char buffer[16 * 1024];
        for (;;) {
            const ssize_t n = ::recv(socket.fd(), buffer, sizeof buffer, 0);
            if (n < 0 && errno == EAGAIN) return;  // nothing yet: on a later pass
            if (n < 0) return fail(ErrorKind::receive, "recv", errno);
            if (n > 0 && timing.first_byte == Clock::time_point{}) timing.first_byte = Clock::now();
            const Status status = n == 0 ? parser.finish() : parser.feed({buffer, std::size_t(n)});
            if (status == Status::complete) break;
            if (status == Status::error) {
                result.fail(n == 0 ? ErrorKind::receive : ErrorKind::protocol, parser.error());
                phase = Phase::finished;
                return;
            }
        }
        result.response = parser.take_response();
        timing.done = Clock::now();
        phase = Phase::finished;
    }

    // A failed system call is this request's error, as in 01_tiny.
    void fail(ErrorKind otherwise, const char* call, int error) {
        result.fail(kind_for_errno(error, otherwise), errno_message(call, error));
        phase = Phase::finished;
    }
};

// Every request at once, and round and round until each one has its result. When no socket has
// news, a pass does nothing but fail a call per request with EALREADY or EAGAIN, and the loop goes
// straight round again.
std::vector<Result> fetch_all(const std::vector<Request>& requests, const Options& options) {
    std::vector<Connection> connections;
    for (const Request& request : requests) connections.emplace_back(request, options);
    std::size_t finished = 0;
    while (finished < connections.size()) {
        for (std::size_t index = 0; index < connections.size(); ++index) {
            Connection& connection = connections[index];
            if (connection.phase == Connection::Phase::finished) continue;
            // One visit: the request goes as far as it can without waiting. A phase that ends
            // falls through to the next in the same visit: a handshake just ended, to a send.
            if (connection.phase == Connection::Phase::not_started) connection.start();
            if (connection.phase == Connection::Phase::connecting) connection.check_connected();
            if (connection.phase == Connection::Phase::sending) connection.try_send();
            if (connection.phase == Connection::Phase::receiving) connection.try_receive();
            if (connection.phase != Connection::Phase::finished) continue;
            connection.socket.close();  // now, not when fetch_all returns
            ++finished;
            if (options.on_result) options.on_result(index, connection.result);
        }
    }
    std::vector<Result> results;
    for (Connection& connection : connections) results.push_back(std::move(connection.result));
    return results;
}

}  // namespace sixways::nonblocking::tiny
