// Stage 06: the fetch as a coroutine. Read exchange() first: it is stage 01's fetch_one with
// `co_await` where stage 01 blocked, and that is the whole lesson of this stage. Everything it
// awaits is built, in this folder, from three things: an event loop, a Future, and a Task that
// steps a coroutine from one Future to the next.
#include "06_coroutines/fetch.hpp"

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "06_coroutines/gather.hpp"
#include "06_coroutines/socket.hpp"
#include "06_coroutines/wait_for.hpp"
#include "common/http.hpp"

namespace sixways::coroutines {

namespace {

// An error that is not a failed system call: a response the parser rejects, a connection closed
// too early, a request with no address. SocketError covers the rest.
class FetchError : public std::runtime_error {
public:
    FetchError(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind(kind) {}
    ErrorKind kind;
};

// Up to this much per recv(). The bytes go straight into the parser; the buffer is not kept.
constexpr std::size_t receive_size = 64 * 1024;

// 1. Connect. A name may resolve to several addresses ("localhost" is ::1 and 127.0.0.1): try
//    each in turn until one accepts; the last error is the one reported. The socket is this
//    coroutine's result: `co_await connect_to_any(...)` hands it to the caller.
Coroutine<Socket> connect_to_any(EventLoop& loop, const std::vector<Address>& addresses) {
    if (addresses.empty()) throw FetchError(ErrorKind::resolve, "resolve: no address to connect to");
    std::optional<SocketError> last_error;
    for (const Address& address : addresses) {
        try {
            Socket attempt = Socket::open(loop, address.family());  // EMFILE: out of descriptors
            co_await sock_connect(loop, attempt.fd(), address);
            co_return std::move(attempt);
        } catch (const SocketError& error) {
            last_error = error;  // e.g. ECONNREFUSED: nobody listens there; try the next address
        }
    }
    throw *last_error;
}

// 3. Receive the response. First wait for it: the server has only just got the request, so a
//    recv() now would find nothing, and cost a system call per request. Then receive until the
//    parser says the response is complete. A server may keep the connection open after answering;
//    waiting for it to close would wait until the deadline. `timing` is the caller's: the first
//    byte's time goes in it as soon as the byte arrives.
Coroutine<Response> receive_response(EventLoop& loop, int fd, const Options& options, Timing& timing) {
    co_await wait_readable(loop, fd);
    ResponseParser parser(options.body_cap, options.keep_headers);
    for (;;) {
        const std::string data = co_await sock_recv(loop, fd, receive_size);
        if (data.empty()) {
            // The server closed the connection: that ends a response framed by the close, and cuts
            // short any other ("connection closed after 10 of 100 body bytes").
            if (parser.finish() == ResponseParser::Status::complete) break;
            throw FetchError(ErrorKind::receive, parser.error());
        }
        if (timing.first_byte == Clock::time_point{}) timing.first_byte = Clock::now();
        const ResponseParser::Status status = parser.feed(data);
        if (status == ResponseParser::Status::complete) break;
        if (status == ResponseParser::Status::error) throw FetchError(ErrorKind::protocol, parser.error());
    }
    co_return parser.take_response();
}

// The lesson: stage 01's fetch_one, three steps in a row, each a co_await of a coroutine that
// hands back its result (the socket, then the response) or throws. While one of them waits, the
// frames of all three levels stay on the heap and the loop runs the other requests. exchange fills
// in `result` as it goes (the time each phase ended, then the response), so that fetch() can name
// the phase a deadline interrupted; fetch() turns exceptions into the Result.
//
// `result` is a reference into fetch()'s frame: safe, because fetch co_awaits this coroutine, which
// runs inside fetch's task and whose frame fetch's frame owns.
Coroutine<void> exchange(EventLoop& loop, const Request& request, const Options& options, Result& result) {
    Socket socket = co_await connect_to_any(loop, request.addresses);  // 1. Connect (above).
    result.timing.connected = Clock::now();

    co_await sock_sendall(loop, socket.fd(), build_get_request(request.url));  // 2. Send it, all of it.
    result.timing.sent = Clock::now();

    result.response = co_await receive_response(loop, socket.fd(), options, result.timing);  // 3. Receive.
    // `socket` closes here, and on every way out above, including cancellation.
}

// A failed system call is a connect, send or receive error by the phase it happened in, unless it
// means something ran out (EMFILE, EADDRNOTAVAIL, ...): that is `limit`.
ErrorKind kind_for(int error_number, const Timing& timing) {
    const std::string_view phase = phase_name(timing);
    const ErrorKind otherwise = phase == "connecting" ? ErrorKind::connect
                                : phase == "sending"  ? ErrorKind::send
                                                      : ErrorKind::receive;
    return kind_for_errno(error_number, otherwise);
}

}  // namespace

Coroutine<Result> fetch(EventLoop& loop, const Request& request, const Options& options, std::size_t index) {
    Result result;
    result.timing.start = Clock::now();
    try {
        // exchange() runs inside this task, at once: the clock and the deadline start with it.
        co_await wait_for(loop, exchange(loop, request, options, result), options.timeout);
        result.timing.done = Clock::now();
    } catch (const TimeoutError&) {
        result.fail(ErrorKind::timeout, timeout_message(options.timeout, phase_name(result.timing)));
    } catch (const FetchError& error) {
        result.fail(error.kind, error.what());
    } catch (const SocketError& error) {
        result.fail(kind_for(error.error_number(), result.timing), error.what());
    } catch (const std::system_error& error) {  // epoll could not watch the socket: ENOMEM, ENOSPC
        result.fail(kind_for_errno(error.code().value(), ErrorKind::limit), error.what());
    }
    if (options.on_result) options.on_result(index, result);
    co_return result;
}

namespace {

// With a limit of C requests in flight: C of these share the list, each taking the next request as
// soon as its last one is done (the crawler's workers do the same with a Queue). `next` and
// `results` belong to run_workers, which outlives every worker.
Coroutine<void> worker(EventLoop& loop, const std::vector<Request>& requests, const Options& options,
                  std::size_t& next, std::vector<Result>& results) {
    while (next < requests.size()) {
        const std::size_t index = next++;
        results[index] = co_await fetch(loop, requests[index], options, index);
    }
}

// All at once: one task per request, and a gather for their results, in request order. This runs
// as a task itself, as an asyncio program's main() does: the tasks it makes start only once it
// waits, so the gather has its done callbacks on every task before any of them runs.
Coroutine<std::vector<Result>> fetch_every(EventLoop& loop, const std::vector<Request>& requests,
                                           const Options& options) {
    std::vector<Task<Result>> tasks;
    tasks.reserve(requests.size());
    for (std::size_t index = 0; index < requests.size(); ++index) {
        tasks.push_back(
            loop.create_task(fetch(loop, requests[index], options, index), "request " + std::to_string(index)));
    }
    co_return co_await gather(loop, std::move(tasks));
}

// At most C at once: C workers, and a gather to wait for them. asyncio code often writes this as
// one task per request, each waiting for a slot of a Semaphore; but then every task exists from the
// start, frame and all, while it waits for its slot: a run of a million requests would hold a
// million frames.
Coroutine<void> run_workers(EventLoop& loop, const std::vector<Request>& requests, const Options& options,
                            std::vector<Result>& results) {
    std::size_t next = 0;  // the next request a worker takes
    std::vector<Task<void>> workers;
    workers.reserve(options.concurrency);
    for (std::size_t k = 0; k < options.concurrency; ++k) {
        workers.push_back(
            loop.create_task(worker(loop, requests, options, next, results), "worker " + std::to_string(k)));
    }
    co_await gather(loop, std::move(workers));
}

}  // namespace

// fetch_all's requests and options outlive every task, as fetch requires: the loop runs to the end,
// and is destroyed with every task, inside this function. Running out of memory is not handled
// here: std::bad_alloc leaves fetch_all, and the shared command line reports every request
// without a result as `limit`, "out of memory", as it does for every stage.
std::vector<Result> fetch_all(const std::vector<Request>& requests, const Options& options) {
    EventLoop loop;
    if (options.concurrency == 0 || options.concurrency >= requests.size()) {
        return loop.run_until_complete(fetch_every(loop, requests, options));
    }
    std::vector<Result> results(requests.size());
    loop.run_until_complete(run_workers(loop, requests, options, results));
    return results;
}

}  // namespace sixways::coroutines
