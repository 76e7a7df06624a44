// Stage 02: a thread per request, or a pool of C threads.
//
// Stage 01 waited for one server at a time. The simplest way to wait for many at once is to let the
// operating system do the waiting: give each request a thread of its own, each running exactly the
// blocking code of stage 01 (fetch_one below is that code, unchanged). While one thread sleeps in
// recv(), the kernel runs another. N requests to a server that answers in 100 ms now take about
// 100 ms, plus the time it takes to start N threads.
//
// What that costs:
//   - Memory. Every thread has a stack of its own. The default size is 8 MiB (`ulimit -s`), which
//     for 10,000 threads is 80 GB of address space: pages are only given memory when touched, but
//     the reservations alone can exceed what the system will promise (overcommit, RLIMIT_AS). So we
//     ask for 64 KiB per thread, enough for fetch_one (its 16 KiB receive buffer included) and what
//     it calls, and 640 MB of address space for 10,000 threads.
//   - Time. Creating a thread takes a system call and some microseconds, and the kernel has to
//     schedule thousands of them; look at the cpu figure in the report.
//   - Limits. The system caps the number of threads (`ulimit -u`, kernel.threads-max) and the
//     memory for stacks; past that, pthread_create fails with EAGAIN. That request then fails with
//     ErrorKind::limit and the rest go on.
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
//         contract makes it the callback's job to be safe for that (the command line's progress
//         counter takes a mutex).
//
// Stage 03 goes the other way: a single thread that never blocks, with non-blocking sockets.

#include "02_threads/fetch.hpp"

#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <new>
#include <string>
#include <utility>

namespace sixways::threads {

namespace {

// The stack of each thread we start (see the top of this file). The default would be 8 MiB.
constexpr std::size_t thread_stack_size = 64 * 1024;

// Owns one socket descriptor and closes it exactly once, on whichever path fetch_one returns.
class Socket {
public:
    Socket() = default;
    explicit Socket(int fd) : fd_(fd) {}
    Socket(Socket&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    Socket& operator=(Socket&& other) noexcept {
        if (this != &other) {
            close();
            fd_ = std::exchange(other.fd_, -1);
        }
        return *this;
    }
    ~Socket() { close(); }

    int fd() const { return fd_; }
    explicit operator bool() const { return fd_ >= 0; }

private:
    // Never retried: Linux releases the descriptor even when close() reports an error, and a second
    // close() could close a descriptor that was meanwhile reused for something else.
    void close() {
        if (fd_ >= 0) ::close(std::exchange(fd_, -1));
    }

    int fd_ = -1;
};

// How a blocking call bounded by the deadline ended.
enum class Outcome {
    done,
    deadline_passed,
    failed,  // errno says why
};

Result fetch_one(const Request& request, const Options& options);
Outcome connect_before(int fd, const Address& address, Clock::time_point deadline);
bool limit_to_time_left(int fd, int option, Clock::time_point deadline);
Result failure(Timing timing, ErrorKind kind, std::string message);
int start_thread(pthread_t& thread, std::function<void()> work);
Result refused_thread(int error);

}  // namespace

std::vector<Result> fetch_all(const std::vector<Request>& requests, const Options& options) {
    // One slot per request, all made before any thread starts; the thread that fetches request k
    // writes results[k] and nothing else.
    std::vector<Result> results(requests.size());
    auto fetch_into_slot = [&](std::size_t index) {
        // An exception that leaves a thread's start routine ends the whole process
        // (std::terminate), so the one a fetch can throw, std::bad_alloc, is caught here and
        // becomes that request's error: memory is a resource like descriptors and threads.
        try {
            results[index] = fetch_one(requests[index], options);
        } catch (const std::bad_alloc&) {
            results[index].error = ErrorKind::limit;
            results[index].error_message = "out of memory";  // short enough to need no allocation
        }
        if (options.on_result) options.on_result(index, results[index]);
    };
    auto fail_without_thread = [&](std::size_t index, int error) {
        results[index] = refused_thread(error);
        if (options.on_result) options.on_result(index, results[index]);
    };

    // The pool's shared counter: the index of the next request a worker takes (see below). Like
    // everything the threads use, it must outlive them: it is declared here, in the scope that
    // joins them at the end, and not in the branch that starts the pool.
    std::atomic<std::size_t> next{0};
    auto worker = [&] {
        for (std::size_t index = next.fetch_add(1); index < requests.size();
             index = next.fetch_add(1)) {
            fetch_into_slot(index);
        }
    };

    // Every thread started is in here, to be joined before the locals it uses go away. Reserved
    // up front, so that adding one never needs memory (and never throws) while threads run.
    std::vector<pthread_t> threads;
    // Starting threads needs memory on this thread too; if even that runs out, the exception must
    // not leave fetch_all while the threads already started still use its locals: it waits until
    // they are joined.
    std::exception_ptr could_not_go_on;
    try {
        if (options.concurrency == 0) {
            // A thread per request, all started at once.
            threads.reserve(requests.size());
            for (std::size_t index = 0; index < requests.size(); ++index) {
                pthread_t thread;
                const int error = start_thread(thread, [&fetch_into_slot, index] {
                    fetch_into_slot(index);
                });
                if (error == 0) {
                    threads.push_back(thread);
                } else {
                    // Refused (EAGAIN: too many threads, or no memory for another stack). This
                    // request fails; the threads already running finish and make room for later
                    // ones.
                    fail_without_thread(index, error);
                }
            }
        } else {
            // A pool of C workers. Each takes the next request from the shared counter, fetches
            // it, and comes back for another until none is left; at most C requests are in flight.
            const std::size_t workers = std::min(options.concurrency, requests.size());
            threads.reserve(workers);
            int error = 0;
            for (std::size_t k = 0; k < workers; ++k) {
                pthread_t thread;
                error = start_thread(thread, worker);
                // If refused: a smaller pool; the workers already running share the work.
                if (error != 0) break;
                threads.push_back(thread);
            }
            if (workers > 0 && threads.empty()) {
                // Not even one worker: no request can be fetched.
                for (std::size_t index = 0; index < requests.size(); ++index) {
                    fail_without_thread(index, error);
                }
            }
        }
    } catch (...) {
        could_not_go_on = std::current_exception();
    }
    // Wait for every thread to finish. After this, every slot of `results` is filled and visible.
    for (pthread_t thread : threads) pthread_join(thread, nullptr);
    if (could_not_go_on) std::rethrow_exception(could_not_go_on);
    return results;
}

namespace {

// One request, from the first connect to the last byte of the response. Every call here blocks
// this thread until the kernel has something to report, or until the time left runs out.
Result fetch_one(const Request& request, const Options& options) {
    Timing timing;
    timing.start = Clock::now();
    const Clock::time_point deadline = deadline_after(timing.start, options.timeout);
    auto timed_out = [&](const char* phase) {
        return failure(timing, ErrorKind::timeout, timeout_message(options.timeout, phase));
    };

    // 1. Connect. A host name may resolve to several addresses ("localhost" is ::1 and 127.0.0.1);
    //    try each in turn until one accepts. One deadline covers all the attempts.
    if (request.addresses.empty()) {
        return failure(timing, ErrorKind::resolve, "resolve: no address to connect to");
    }
    Socket socket;
    const char* failed_call = "connect";
    int error = 0;
    for (const Address& address : request.addresses) {
        Socket attempt(::socket(address.family(), SOCK_STREAM | SOCK_CLOEXEC, 0));
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
        if (outcome == Outcome::deadline_passed) return timed_out("connecting");
        failed_call = "connect";  // e.g. ECONNREFUSED: nobody listens there; try the next address
        error = errno;
    }
    if (!socket) {
        // EMFILE, ENFILE or EADDRNOTAVAIL (no ephemeral port left) mean we ran out of something,
        // not that the server is unreachable: kind_for_errno calls those `limit`.
        return failure(timing, kind_for_errno(error, ErrorKind::connect),
                       errno_message(failed_call, error));
    }
    timing.connected = Clock::now();

    // 2. Send the request. send() returns how many bytes the kernel took, which can be fewer than
    //    we gave it (its send buffer was full); send the rest until none is left. MSG_NOSIGNAL: a
    //    server that has closed its end makes send() fail with EPIPE instead of killing the whole
    //    process with SIGPIPE.
    const std::string request_bytes = build_get_request(request.url);
    std::size_t sent = 0;
    while (sent < request_bytes.size()) {
        if (!limit_to_time_left(socket.fd(), SO_SNDTIMEO, deadline)) return timed_out("sending");
        const ssize_t n = ::send(socket.fd(), request_bytes.data() + sent,
                                 request_bytes.size() - sent, MSG_NOSIGNAL);
        if (n < 0) {
            // A socket with a timeout is never restarted after a signal handler, even with
            // SA_RESTART; the call simply fails with EINTR, and we make it again.
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) return timed_out("sending");
            return failure(timing, kind_for_errno(errno, ErrorKind::send),
                           errno_message("send", errno));
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
        const bool first = timing.first_byte == Clock::time_point{};
        const char* phase = first ? "waiting" : "receiving";
        if (!limit_to_time_left(socket.fd(), SO_RCVTIMEO, deadline)) return timed_out(phase);
        const ssize_t n = ::recv(socket.fd(), buffer, sizeof buffer, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) return timed_out(phase);
            // ECONNRESET: the server reset the connection.
            return failure(timing, kind_for_errno(errno, ErrorKind::receive),
                           errno_message("recv", errno));
        }
        if (n == 0) {
            // The server closed the connection. That ends a response framed by the close, and
            // cuts short any other: "connection closed after 10 of 100 body bytes".
            if (parser.finish() == ResponseParser::Status::complete) break;
            return failure(timing, ErrorKind::receive, parser.error());
        }
        if (first) timing.first_byte = Clock::now();
        const ResponseParser::Status status =
            parser.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
        if (status == ResponseParser::Status::complete) break;
        if (status == ResponseParser::Status::error) {
            return failure(timing, ErrorKind::protocol, parser.error());
        }
    }
    timing.done = Clock::now();

    Result result;
    result.response = parser.take_response();
    result.timing = timing;
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
        switch (errno) {
        case EINTR:        // A signal interrupted the wait, not the handshake. Calling connect()
            continue;      // again on a blocking socket waits for the same handshake once more.
        case EINPROGRESS:  // The time ran out during the first call,
        case EALREADY:     // or during a repeated one.
            return Outcome::deadline_passed;
        default:
            return Outcome::failed;
        }
    }
}

// Allows the next blocking call on `fd` only the time left before `deadline`: SO_SNDTIMEO bounds
// connect() and send(), SO_RCVTIMEO bounds recv(). When such a call runs out of time it fails with
// EAGAIN (EINPROGRESS for connect). Returns false, and sets nothing, when no time is left.
bool limit_to_time_left(int fd, int option, Clock::time_point deadline) {
    const Duration left = deadline - Clock::now();
    if (left <= Duration::zero()) return false;
    // A timeout of zero means "wait forever", so what is left is rounded up, never down to zero.
    // (The kernel rounds it up again, to its clock tick of a few milliseconds.)
    const auto micros = std::chrono::ceil<std::chrono::microseconds>(left).count();
    timeval limit{};
    limit.tv_sec = static_cast<time_t>(micros / 1'000'000);
    limit.tv_usec = static_cast<suseconds_t>(micros % 1'000'000);
    // Cannot fail for an open socket and a timeval in range.
    ::setsockopt(fd, SOL_SOCKET, option, &limit, sizeof limit);
    return true;
}

Result failure(Timing timing, ErrorKind kind, std::string message) {
    Result result;
    result.error = kind;
    result.error_message = std::move(message);
    result.timing = timing;
    result.timing.done = Clock::now();
    return result;
}

// Starts `work` on a new thread with a stack of thread_stack_size. Returns 0, or the error number
// pthread_create returned (EAGAIN when the system refuses another thread).
//
// Why not std::thread: it cannot be given a stack size, so every thread would reserve the default
// 8 MiB. (It also reports a refused thread by throwing std::system_error; that would do.)
int start_thread(pthread_t& thread, std::function<void()> work) {
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setstacksize(&attributes, thread_stack_size);
    // The new thread gets `work` through a void*. It owns it from then on and deletes it when done.
    // No memory for it is reported like a refused thread: throwing here would unwind fetch_all
    // while the threads already started still use its locals.
    std::unique_ptr<std::function<void()>> owned;
    try {
        owned = std::make_unique<std::function<void()>>(std::move(work));
    } catch (const std::bad_alloc&) {
        pthread_attr_destroy(&attributes);
        return ENOMEM;
    }
    const int error = pthread_create(
        &thread, &attributes,
        [](void* argument) -> void* {
            const std::unique_ptr<std::function<void()>> work_to_do(
                static_cast<std::function<void()>*>(argument));
            (*work_to_do)();
            return nullptr;
        },
        owned.get());
    pthread_attr_destroy(&attributes);
    if (error == 0) owned.release();  // the thread has it now
    return error;
}

// The result of a request that never got a thread.
Result refused_thread(int error) {
    Result result;
    result.error = ErrorKind::limit;
    result.error_message = errno_message("pthread_create", error);
    result.timing.done = Clock::now();  // start stays unset: it never began
    return result;
}

}  // namespace

}  // namespace sixways::threads
