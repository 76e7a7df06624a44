// Stage 03: non-blocking sockets, polled in a busy loop.
//
// The lesson is chapter 03 (docs/03_nonblocking.md): why one thread for every request means that no
// call may block, what EINPROGRESS, EALREADY and EAGAIN mean, and why a request now keeps its own
// phase. tiny.cpp is the idea in one file; read it first.
//
// What this file adds to it: at most `limit` requests in flight (--concurrency), a deadline that
// each visit checks by hand (nothing wakes the loop when time runs out), and every address of a
// name (a failed handshake moves on to the next one).
//
// fetch_all_one_at_a_time (the binary's --one-at-a-time) is the first loop one writes with
// non-blocking sockets, and where this stage began: one request asked until it is finished, then
// the next. It is as slow as stage 01 and keeps a core busy besides.
//
// Stage 04 stops the spinning: it asks the kernel (epoll) which sockets are ready, and sleeps until
// one is.

#include "03_nonblocking/fetch.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <list>
#include <string>
#include <utility>

#include "common/descriptor.hpp"

namespace sixways::nonblocking {

namespace {

// Everything one request needs between two visits of the loop; in stages 01 and 02 these were the
// local variables of fetch_one.
struct Connection {
    enum class Phase { connecting, sending, receiving, finished };

    Connection(std::size_t index, const Request& request, const Options& options)
        : index(index), request(request), options(options),
          parser(options.body_cap, options.keep_headers) {}

    std::size_t index;       // the request's position in `requests`, and its result's
    const Request& request;
    const Options& options;
    Phase phase = Phase::connecting;
    Descriptor socket;  // closed when the next address replaces it, or when the request ends
    std::size_t next_address = 0;  // request.addresses[next_address - 1] is being connected to
    const char* failed_call = "connect";  // why the last address failed, for the error message
    int error = 0;
    Clock::time_point deadline;
    std::string request_bytes;  // the GET request, of which `sent` bytes are sent
    std::size_t sent = 0;
    ResponseParser parser;
    Result result;  // its timing fills in as the request goes; the response or error at the end
};

void start(Connection& connection);
bool advance(Connection& connection);

}  // namespace

std::vector<Result> fetch_all(const std::vector<Request>& requests, const Options& options) {
    std::vector<Result> results(requests.size());
    const std::size_t limit = options.concurrency == 0 ? requests.size() : options.concurrency;
    // A list, not a vector: a Connection holds references (request, options), so it cannot be
    // assigned, and a vector's erase() assigns each later element to the slot before it: it would
    // not compile. A list erases in place and never moves a Connection.
    std::list<Connection> in_flight;
    std::size_t next = 0;  // the next request to start

    while (next < requests.size() || !in_flight.empty()) {
        // Start requests while fewer than `limit` are in flight.
        while (next < requests.size() && in_flight.size() < limit) {
            start(in_flight.emplace_back(next, requests[next], options));
            ++next;
        }

        // One pass over every request in flight: each goes as far as it can without waiting, and
        // those that are finished leave. Then straight round again. When no socket has news, a
        // pass does nothing but fail a system call per request with EAGAIN (or EALREADY), and
        // the loop spins through such passes until the server answers. This is where stage 04
        // sleeps in epoll_wait() until the kernel says which sockets have something.
        for (auto it = in_flight.begin(); it != in_flight.end();) {
            if (advance(*it)) {
                results[it->index] = std::move(it->result);
                if (options.on_result) options.on_result(it->index, results[it->index]);
                it = in_flight.erase(it);  // closes its socket, if it still has one
            } else {
                ++it;
            }
        }
    }
    return results;
}

std::vector<Result> fetch_all_one_at_a_time(const std::vector<Request>& requests,
                                            const Options& options) {
    std::vector<Result> results;
    results.reserve(requests.size());
    for (std::size_t index = 0; index < requests.size(); ++index) {
        Connection connection(index, requests[index], options);
        start(connection);
        // Ask, and ask again, until this one request is finished. Nothing else can happen
        // meanwhile: the waiting is the same as with a blocking socket, only done by us, with all
        // the CPU we are given, instead of by the kernel for free.
        while (!advance(connection)) {
        }
        results.push_back(std::move(connection.result));
        if (options.on_result) options.on_result(index, results.back());
    }
    return results;
}

namespace {

void connect_next_address(Connection& connection);
void check_connected(Connection& connection);
void try_send(Connection& connection);
void try_receive(Connection& connection);
void succeed(Connection& connection);
void fail(Connection& connection, ErrorKind kind, std::string message);

// Starts a request: its deadline begins now, with its first connect.
void start(Connection& connection) {
    connection.result.timing.start = Clock::now();
    connection.deadline =
        deadline_after(connection.result.timing.start, connection.options.timeout);
    connection.request_bytes = build_get_request(connection.request.url);
    if (connection.request.addresses.empty()) {
        fail(connection, ErrorKind::resolve, "resolve: no address to connect to");
        return;
    }
    connect_next_address(connection);
}

// Moves a request on as far as it can go without waiting, and returns true once its result is
// final. Each phase that completes falls through to the next in the same visit: a handshake that
// has just finished is followed at once by the send, and the send by a first try to receive.
bool advance(Connection& connection) {
    using Phase = Connection::Phase;
    if (connection.phase == Phase::connecting) check_connected(connection);
    if (connection.phase == Phase::sending) try_send(connection);
    if (connection.phase == Phase::receiving) try_receive(connection);

    // Nobody wakes us when time runs out: like everything else, the deadline is checked on each
    // visit. A request that is still making progress (a server trickling one byte at a time) is
    // stopped here all the same.
    if (connection.phase != Phase::finished && Clock::now() >= connection.deadline) {
        const char* phase = phase_name(connection.result.timing);
        fail(connection, ErrorKind::timeout, timeout_message(connection.options.timeout, phase));
    }
    return connection.phase == Phase::finished;
}

// Opens a non-blocking socket to the request's next address and starts connecting. connect()
// returns at once: almost always with EINPROGRESS (the handshake has begun); check_connected finds
// out later how it ended. An address that fails at once is skipped for the next one; when none is
// left, the request fails with the last address's error.
void connect_next_address(Connection& connection) {
    const std::vector<Address>& addresses = connection.request.addresses;
    while (connection.next_address < addresses.size()) {
        const Address& address = addresses[connection.next_address++];
        // Moving a new socket in closes the one that failed before it.
        connection.socket =
            Descriptor(::socket(address.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
        if (!connection.socket) {  // e.g. EMFILE: this process has no descriptor left
            connection.failed_call = "socket";
            connection.error = errno;
            continue;
        }
        // 0 (connected at once) is rare but allowed; check_connected will then see EISCONN.
        if (::connect(connection.socket.fd(), address.get(), address.length) == 0 ||
            errno == EINPROGRESS) {
            connection.phase = Connection::Phase::connecting;
            return;
        }
        connection.failed_call = "connect";  // e.g. EADDRNOTAVAIL: no ephemeral port left
        connection.error = errno;
    }
    // EMFILE, ENFILE or EADDRNOTAVAIL mean we ran out of something, not that the server is
    // unreachable: kind_for_errno calls those `limit`.
    fail(connection, kind_for_errno(connection.error, ErrorKind::connect),
         errno_message(connection.failed_call, connection.error));
}

// Has the handshake finished, and how? Nothing tells us, so we ask, by calling connect() again on
// the same socket with the same address. Its answer says all we need in one call:
//   EALREADY           still connecting: ask again on the next pass;
//   0 or EISCONN       connected (Linux answers 0 the first time it notices, EISCONN after that);
//   anything else      the handshake's own error (ECONNREFUSED, ETIMEDOUT, ...): this address has
//                      failed, and the socket must not be asked again (a third connect() would
//                      start a new handshake).
// The alternatives fall short. getsockopt(SO_ERROR) reads 0 both while connecting and once
// connected, so alone it cannot tell them apart. A send() of zero bytes fails with EAGAIN while
// connecting, but reports a failed handshake's error only once, and EPIPE after that. Stage 04
// waits instead for epoll to report the socket writable, which happens when the handshake is over,
// and then reads SO_ERROR.
void check_connected(Connection& connection) {
    const Address& address = connection.request.addresses[connection.next_address - 1];
    if (::connect(connection.socket.fd(), address.get(), address.length) == 0 ||
        errno == EISCONN) {
        connection.result.timing.connected = Clock::now();
        connection.phase = Connection::Phase::sending;
        return;
    }
    if (errno == EALREADY) return;  // not yet
    connection.failed_call = "connect";
    connection.error = errno;
    connect_next_address(connection);  // the deadline keeps running: it covers every address
}

// Sends as much of the request as the kernel takes. MSG_NOSIGNAL: a server that has closed its end
// makes send() fail with EPIPE instead of killing the process with SIGPIPE.
void try_send(Connection& connection) {
    const std::string& bytes = connection.request_bytes;
    while (connection.sent < bytes.size()) {
        const ssize_t n = ::send(connection.socket.fd(), bytes.data() + connection.sent,
                                 bytes.size() - connection.sent, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) return;  // no room yet: on a later pass
            if (errno == EINTR) continue;
            fail(connection, kind_for_errno(errno, ErrorKind::send), errno_message("send", errno));
            return;
        }
        connection.sent += static_cast<std::size_t>(n);
    }
    connection.result.timing.sent = Clock::now();
    connection.phase = Connection::Phase::receiving;
}

// Reads whatever has arrived, until recv() says there is nothing more for now (EAGAIN), and feeds
// it to the parser. Stops as soon as the response is complete, even if the server keeps the
// connection open.
void try_receive(Connection& connection) {
    Timing& timing = connection.result.timing;
    char buffer[16 * 1024];
    for (;;) {
        const ssize_t n = ::recv(connection.socket.fd(), buffer, sizeof buffer, 0);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) return;  // nothing yet: on a later pass
            if (errno == EINTR) continue;
            // ECONNRESET: the server reset the connection.
            fail(connection, kind_for_errno(errno, ErrorKind::receive),
                 errno_message("recv", errno));
            return;
        }
        if (n == 0) {
            // The server closed the connection. That ends a response framed by the close, and
            // cuts short any other.
            if (connection.parser.finish() == ResponseParser::Status::complete) {
                succeed(connection);
            } else {
                fail(connection, ErrorKind::receive, connection.parser.error());
            }
            return;
        }
        if (timing.first_byte == Clock::time_point{}) timing.first_byte = Clock::now();
        const ResponseParser::Status status =
            connection.parser.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
        if (status == ResponseParser::Status::complete) {
            succeed(connection);
            return;
        }
        if (status == ResponseParser::Status::error) {
            fail(connection, ErrorKind::protocol, connection.parser.error());
            return;
        }
    }
}

// The response is complete: keep it and close the socket now rather than when the Connection goes.
void succeed(Connection& connection) {
    connection.result.response = connection.parser.take_response();
    connection.result.timing.done = Clock::now();
    connection.phase = Connection::Phase::finished;
    connection.socket.close();
}

void fail(Connection& connection, ErrorKind kind, std::string message) {
    connection.result.fail(kind, std::move(message));
    connection.phase = Connection::Phase::finished;
    connection.socket.close();
}

}  // namespace

}  // namespace sixways::nonblocking
