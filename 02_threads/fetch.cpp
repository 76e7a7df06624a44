// Stage 02: a POSIX thread per request, or a fixed pool of them (--concurrency C).
//
// Stage 01 waited for one server at a time. The simplest way to wait for many at once is to let the
// operating system do the waiting: give each request a thread of its own, each running exactly the
// blocking code of stage 01 (fetch_one below is that code, unchanged). While one thread sleeps in
// recv(), the kernel runs another. N requests to a server that answers in 100 ms now take about
// 100 ms, plus the time it takes to start N threads.
//
// What that costs:
//   - Memory. Every thread has a stack of its own. The default size is 8 MiB (`ulimit -s`), which
//     for 10,000 threads is 78 GiB of address space: pages are only given memory when touched, but
//     the reservations alone can exceed what the system will promise (overcommit, RLIMIT_AS). So we
//     ask for 64 KiB per thread, enough for fetch_one (its 16 KiB receive buffer included) and what
//     it calls: 625 MiB of stacks for 10,000 threads.
//   - Time. Creating a thread takes a system call and some microseconds, and the kernel has to
//     schedule thousands of them; look at the cpu figure in the report.
//   - Limits. The system caps the number of threads (`ulimit -u`, kernel.threads-max) and the
//     memory for stacks; past that, pthread_create fails with EAGAIN. That request then fails with
//     ErrorKind::limit and the rest go on, as does a request that runs out of memory (`ulimit -v`).
//   - Care. Threads run at the same time over the same memory. Anything two threads touch, where
//     at least one of them writes, needs a lock or an atomic, or the program has a data race (its
//     behaviour is undefined; ThreadSanitizer finds them). Here is what is shared:
//       * `requests` and `options`: only read, by every thread. Concurrent reads need no lock.
//       * `results`: sized before any thread starts, and slot k is written by one thread only (the
//         one fetching request k). Different elements of a vector are different objects, so no
//         two threads write the same memory. The calling thread reads the slots only after
//         pthread_join, which guarantees it sees everything the joined thread wrote.
//       * the pool's counter of the next request to take: every worker reads it and adds one. Two
//         workers doing that at once without protection could both read 7 and both fetch request
//         7. It is a std::atomic, whose fetch_add reads and adds as one indivisible step.
//       * options.on_result: called from the worker threads, at the same time. The Options
//         contract makes it the callback's job to be safe for that, and not to throw (the command
//         line's progress counter takes a mutex).
//
// Stage 03 goes the other way: a single thread that never blocks, with non-blocking sockets.

#include "02_threads/fetch.hpp"

#include <pthread.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <memory>
#include <new>
#include <string>
#include <utility>

#include "common/descriptor.hpp"

namespace sixways::threads {

namespace {

// The stack of each thread we start (see the top of this file). The default would be 8 MiB. A
// system whose smallest stack (PTHREAD_STACK_MIN) is larger gets its smallest: below it,
// pthread_attr_setstacksize refuses, and the thread would silently get the 8 MiB default.
constexpr std::size_t thread_stack_size = 64 * 1024;

// How a blocking call bounded by the deadline ended (failed: errno says why).
enum class Outcome { done, deadline_passed, failed };

Result fetch_one(const Request& request, const Options& options);
Outcome connect_before(int fd, const Address& address, Clock::time_point deadline);
bool limit_to_time_left(int fd, int option, Clock::time_point deadline);
Result fetch_on_thread(const Request& request, const Options& options) noexcept;
Result refused_thread(int error) noexcept;
template <typename Work>
int start_thread(std::vector<pthread_t>& threads, const Work& work) noexcept;

}  // namespace

std::vector<Result> fetch_all(const std::vector<Request>& requests, const Options& options) {
    // One slot per request, made before any thread starts: request k's thread writes only slot k.
    std::vector<Result> results(requests.size());
    auto finish = [&](std::size_t index, Result result) {
        results[index] = std::move(result);
        if (options.on_result) options.on_result(index, results[index]);
    };
    std::atomic<std::size_t> next{0};  // the pool's counter: the next request a worker takes
    auto worker = [&] {
        for (std::size_t i = next.fetch_add(1); i < requests.size(); i = next.fetch_add(1)) {
            finish(i, fetch_on_thread(requests[i], options));
        }
    };
    // Every thread started, to be joined. Room for all of them is made before the first starts.
    const std::size_t workers = std::min(options.concurrency, requests.size());
    std::vector<pthread_t> threads;
    threads.reserve(options.concurrency == 0 ? requests.size() : workers);
    if (options.concurrency == 0) {
        // A thread per request, all started at once. One the system refuses fails its request.
        for (std::size_t index = 0; index < requests.size(); ++index) {
            const int error = start_thread(threads, [&, index] {
                finish(index, fetch_on_thread(requests[index], options));
            });
            if (error != 0) finish(index, refused_thread(error));
        }
    } else {
        // A pool of C workers, each taking the next request from the counter until none is left.
        // Refused ones make the pool smaller; with no worker at all, every request fails.
        int error = 0;
        while (threads.size() < workers && error == 0) error = start_thread(threads, worker);
        if (threads.empty()) {
            for (std::size_t i = 0; i < requests.size(); ++i) finish(i, refused_thread(error));
        }
    }
    // Wait for every thread to finish. After this, every slot of `results` is filled and visible.
    for (const pthread_t thread : threads) pthread_join(thread, nullptr);
    return results;
}

namespace {

// ---- Stage 01's code, unchanged: fetch_one, connect_before and limit_to_time_left are copied
// from 01_blocking/fetch.cpp, and each thread runs them as they are. On a first reading, skip to
// fetch_on_thread. ----

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

// fetch_one as a thread runs it. An exception that leaves a thread's start routine ends the whole
// process (std::terminate), so the one a fetch can throw, std::bad_alloc, becomes this request's
// error instead: memory is a resource like descriptors and threads.
Result fetch_on_thread(const Request& request, const Options& options) noexcept {
    Result result;
    try {
        result = fetch_one(request, options);
    } catch (const std::bad_alloc&) {
        // Needs no allocation: std::string keeps text this short in a buffer of its own (up to 15
        // characters in libstdc++), and "out of memory" is 13.
        result.fail(ErrorKind::limit, "out of memory");
    }
    return result;
}

// The result of a request that never got a thread: `error` is why (EAGAIN: too many threads, or no
// memory for another stack; ENOMEM: no memory to hand the thread its work). Its start stays unset:
// it never began. Never throws: with no memory left to spell out the message, it says so instead.
Result refused_thread(int error) noexcept {
    Result result;
    try {
        result.fail(ErrorKind::limit, errno_message("pthread_create", error));
    } catch (const std::bad_alloc&) {
        result.fail(ErrorKind::limit, "out of memory");
    }
    return result;
}

// Starts a copy of `work` on a new thread with a stack of thread_stack_size, and adds the thread to
// `threads` (within the room reserved there: it never allocates). Returns 0, or the error number
// that kept it from starting: pthread_create's (EAGAIN when the system refuses another thread), or
// ENOMEM when there is no memory for the copy. The new thread owns the copy and deletes it.
//
// Why not std::thread: it cannot be given a stack size, so every thread would reserve the default
// 8 MiB. (It also reports a refused thread by throwing std::system_error; that would do.)
template <typename Work>
int start_thread(std::vector<pthread_t>& threads, const Work& work) noexcept {
    // pthread_create is a C function: it takes a plain function and one void* to pass to it. A
    // lambda without captures converts to such a function; the void* is the heap copy of `work`,
    // whose ownership passes to the new thread, which deletes it when the work is done.
    const auto run = [](void* copy) -> void* {
        const std::unique_ptr<Work> work_to_do(static_cast<Work*>(copy));
        (*work_to_do)();
        return nullptr;
    };
    std::unique_ptr<Work> copy(new (std::nothrow) Work(work));
    if (!copy) return ENOMEM;
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setstacksize(&attributes, std::max<std::size_t>(thread_stack_size, PTHREAD_STACK_MIN));
    pthread_t thread;
    const int error = pthread_create(&thread, &attributes, run, copy.get());
    pthread_attr_destroy(&attributes);
    if (error != 0) return error;  // `copy` deletes the work that no thread will run
    copy.release();                 // the new thread owns it now
    threads.push_back(thread);
    return 0;
}

}  // namespace

}  // namespace sixways::threads
