// 02_tiny: the whole idea of stage 02 in one file, read top to bottom.
//
// 01_tiny waited for one server at a time. Here every request gets a thread of its own, and each
// thread runs 01_tiny's fetch, unchanged: while one thread is blocked in recv(), the kernel runs
// another. N requests to a server that answers in 100 ms take about 100 ms, plus the time it takes
// to start N threads. Each thread costs a stack, and the system allows only so many (`ulimit -u`).
// Only fetch_all, at the bottom, is new.
//
// Threads run at the same time over the same memory, so here is what they share, and why that is
// safe. `requests` and `options` are only read. `results` has a slot per request, made before any
// thread starts, and request k's thread writes slot k only; fetch_all reads the slots after
// join(), which makes everything a thread wrote visible to it. options.on_result is called from
// many threads at once: the caller's callback must be safe for that (the command line's takes a
// mutex).
//
// It leaves out, on purpose, what fetch.cpp adds: a deadline (here a server that never answers is
// waited for until Ctrl-C), the other addresses of a name, a fixed pool of threads (--concurrency),
// and a small stack for each thread (std::thread cannot be given a stack size: each one reserves
// the default, `ulimit -s`, 8 MiB on most systems, of address space). Nor does it handle running
// out of memory: a std::bad_alloc that leaves a thread, or leaves fetch_all while threads still
// run, ends the whole process (std::terminate). Stage 03 goes the other way: a single thread for
// every request, on sockets that never block.
#include "02_threads/tiny.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include "common/descriptor.hpp"

namespace sixways::threads::tiny {

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

// A thread per request, all started at once, then every one joined. A thread the system refuses
// (EAGAIN: too many threads, or no memory for another stack, which std::thread throws as a
// std::system_error) fails its request as `limit`, and the others go on.
std::vector<Result> fetch_all(const std::vector<Request>& requests, const Options& options) {
    std::vector<Result> results(requests.size());
    auto finish = [&](std::size_t index, Result result) {
        results[index] = std::move(result);
        if (options.on_result) options.on_result(index, results[index]);
    };
    std::vector<std::thread> threads;
    for (std::size_t index = 0; index < requests.size(); ++index) {
        try {
            threads.emplace_back([&, index] { finish(index, fetch(requests[index], options)); });
        } catch (const std::system_error& error) {
            Result refused;  // it never started: its timing.start stays unset
            finish(index, failed(refused, ErrorKind::limit, "std::thread", error.code().value()));
        }
    }
    for (std::thread& thread : threads) thread.join();
    return results;
}

}  // namespace sixways::threads::tiny
