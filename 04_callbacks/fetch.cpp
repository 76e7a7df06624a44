// Stage 04: callbacks on an epoll reactor.
//
// Stage 03 ran every request on one thread with non-blocking sockets, but nothing told it which
// socket had news, so it asked all of them, all the time, and burned a core doing it. This stage
// asks the kernel instead. epoll keeps the list of sockets we wait for; epoll_wait() sleeps until
// one of them is ready (or a timer is due) and says which. The EventLoop (event_loop.hpp) turns
// that into callbacks: "when this socket is writable, call this function".
//
// So a request is no longer a function that runs from top to bottom. It is a Fetcher object (the
// shape of the Fetcher in "A Web Crawler With asyncio Coroutines", 500 Lines or Less): start()
// begins a non-blocking connect and asks the loop to call on_connected when the socket turns
// writable; on_connected sends the request and asks for on_readable; on_readable feeds what arrives
// to the parser until the response is complete. Each step does what it can without waiting, names
// the step that comes next, and returns to the loop.
//
// That is the cost of this stage, and the reason for the next one. In stage 01 the socket, the
// request being sent, how far the send got and the parser were local variables of one function,
// and "what happens next" was simply the next line. Here each step returns before the next can
// run, so all of that moves into data members that outlive the steps (look at the members of
// Fetcher), and "what happens next" is whichever callback was registered last. An error can happen
// in any step, so every step must be able to end the request, and ending it means undoing every
// registration exactly once (finish()). Read a step alone and you cannot tell where it sits in the
// story. Stage 05 writes the fetch again as one function with a `co_yield` at each wait, and the
// compiler keeps those locals for us.
#include "04_callbacks/fetch.hpp"

#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include "04_callbacks/event_loop.hpp"
#include "common/explain.hpp"
#include "common/http.hpp"

namespace sixways::callbacks {

namespace {

// One request, from its first connect to its result. Create it, call start(), and the loop does
// the rest; when the result is final the Fetcher calls `done`. It may be destroyed at any time
// after that. (Before that only when an exception ends the run: its loop dies with it, so the
// destructor has only its socket to close.)
class Fetcher {
public:
    Fetcher(EventLoop& loop, const Request& request, const Options& options, Result& result,
            Callback done)
        : loop_(loop), request_(request), options_(options), result_(result),
          done_(std::move(done)), parser_(options.body_cap, options.keep_headers) {}
    ~Fetcher() { close_socket(); }
    Fetcher(const Fetcher&) = delete;
    Fetcher& operator=(const Fetcher&) = delete;

    // Step 1. The deadline starts now, with the first connect, and covers every address tried.
    void start() {
        result_.timing.start = loop_.time();
        timeout_ = loop_.call_later(options_.timeout, [this] { on_timeout(); });
        request_bytes_ = build_get_request(request_.url);
        if (request_.addresses.empty()) {
            fail(ErrorKind::resolve, "resolve: no address to connect to");
            return;
        }
        connect_next_address();
    }

private:
    // Opens a non-blocking socket to the next address and starts connecting. connect() returns at
    // once, normally with EINPROGRESS: the handshake goes on in the kernel, and the socket turns
    // writable when it has ended, well or badly. (It may also return 0, connected at once; the
    // socket is then writable straight away, so both cases take the same path.) An address that
    // fails at once is skipped; when none is left, the request fails with the last error.
    void connect_next_address() {
        while (next_address_ < request_.addresses.size()) {
            const Address& address = request_.addresses[next_address_++];
            fd_ = ::socket(address.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
            if (fd_ < 0) {  // EMFILE and friends: this request fails with `limit`, the run goes on
                failed_call_ = "socket";
                error_ = errno;
                continue;
            }
            const int connected = ::connect(fd_, address.get(), address.length);
            explain::call("connect", fd_, connected);
            if (connected == 0 || errno == EINPROGRESS) {
                try {
                    loop_.add_writer(fd_, [this] { on_connected(); });
                } catch (const std::system_error& error) {
                    // epoll refused the socket: no memory, or the per-user limit on watched
                    // descriptors (ENOSPC). The next address would fare no better, and the other
                    // requests need not fail with this one: `limit`, and the run goes on.
                    const int code = error.code().value();
                    fail(kind_for_errno(code, ErrorKind::limit), errno_message("epoll_ctl", code));
                }
                return;
            }
            failed_call_ = "connect";  // e.g. EADDRNOTAVAIL: no ephemeral port left
            error_ = errno;
            close_socket();
        }
        fail(kind_for_errno(error_, ErrorKind::connect), errno_message(failed_call_, error_));
    }

    // Step 2: the socket is writable, so the handshake has ended. SO_ERROR says how: 0, or the
    // error connect() would have returned had it blocked (ECONNREFUSED, ETIMEDOUT, ...).
    void on_connected() {
        explain::runs("on_connected", fd_);
        const int error = connect_error(fd_);
        if (error != 0) {
            failed_call_ = "connect";
            error_ = error;
            close_socket();                 // unregisters on_connected first
            return connect_next_address();  // the deadline keeps running
        }
        result_.timing.connected = loop_.time();
        send_request();
    }

    // Step 3: send as much of the request as the kernel takes. When it takes only part (its
    // buffer is full), `sent_` remembers how far we got, and we come back here when the socket is
    // writable again. MSG_NOSIGNAL: a server that has closed its end makes send() fail with EPIPE
    // instead of killing the process with SIGPIPE.
    void send_request() {
        explain::runs("send_request", fd_);
        while (sent_ < request_bytes_.size()) {
            const ssize_t n = ::send(fd_, request_bytes_.data() + sent_,
                                     request_bytes_.size() - sent_, MSG_NOSIGNAL);
            explain::call("send", fd_, n);
            if (n < 0) {
                if (errno == EINTR) continue;
                if (errno == EAGAIN || errno == EWOULDBLOCK) {
                    // Replaces on_connected as the writer; epoll is not even told, since we
                    // still want "writable".
                    return loop_.add_writer(fd_, [this] { send_request(); });
                }
                return fail(kind_for_errno(errno, ErrorKind::send), errno_message("send", errno));
            }
            sent_ += static_cast<std::size_t>(n);
        }
        result_.timing.sent = loop_.time();
        // Swap the writer for a reader. Nothing more to write: with a writer left registered,
        // epoll_wait would return at once on every turn (a socket is writable almost all the time),
        // and that is stage 03's busy loop all over again. The loop tells epoll of each change at
        // once: an EPOLL_CTL_MOD to "readable or writable", then one to "readable".
        loop_.add_reader(fd_, [this] { on_readable(); });
        loop_.remove_writer(fd_);
    }

    // Step 4: something arrived (or the server closed, or reset). Read until recv() says there is
    // nothing more for now (EAGAIN), feeding the parser, and stop as soon as the response is
    // complete, even if the server keeps the connection open. The buffer lives on the stack: the
    // loop calls every callback from the same shallow depth, so 64 KiB here costs nothing, and a
    // big buffer means few recv() calls for a big body.
    void on_readable() {
        explain::runs("on_readable", fd_);
        std::array<char, 64 * 1024> buffer;
        for (;;) {
            const ssize_t n = ::recv(fd_, buffer.data(), buffer.size(), 0);
            explain::call("recv", fd_, n);
            if (n < 0) {
                if (errno == EINTR) continue;
                if (errno == EAGAIN || errno == EWOULDBLOCK) return;  // wait for the next event
                // ECONNRESET: the server reset the connection.
                return fail(kind_for_errno(errno, ErrorKind::receive), errno_message("recv", errno));
            }
            if (n == 0) {
                // The server closed the connection. That ends a response framed by the close,
                // and cuts short any other.
                if (parser_.finish() == ResponseParser::Status::complete) return succeed();
                return fail(ErrorKind::receive, parser_.error());
            }
            Timing& timing = result_.timing;
            if (timing.first_byte == Clock::time_point{}) timing.first_byte = loop_.time();
            const ResponseParser::Status status =
                parser_.feed(std::string_view(buffer.data(), static_cast<std::size_t>(n)));
            if (status == ResponseParser::Status::complete) return succeed();
            if (status == ResponseParser::Status::error) return fail(ErrorKind::protocol, parser_.error());
        }
    }

    // The other way a request ends: its deadline passed first. The timer is the one callback that
    // can fire in any phase, so it has to find out which phase it interrupted: phase_name reads it
    // from the times the request has reached (result_.timing), another piece of state kept here.
    void on_timeout() {
        explain::runs("on_timeout", fd_);
        fail(ErrorKind::timeout, timeout_message(options_.timeout, phase_name(result_.timing)));
    }

    void succeed() {
        result_.response = parser_.take_response();
        result_.timing.done = loop_.time();
        finish();
    }

    void fail(ErrorKind kind, std::string message) {
        result_.fail(kind, std::move(message));
        finish();
    }

    // Exactly one outcome. Every step that ends the request comes here, and the first thing it
    // does is make sure no other step can run: cancel the timer (if the data won, the timeout must
    // not fire later; the loop skips it even if it is already due in this very turn) and remove
    // the socket's reader or writer (if the timeout won, no later event of the socket may reach
    // us). Then close the socket and report.
    void finish() {
        timeout_.cancel();
        close_socket();
        done_();
    }

    // Through the loop, which drops the socket's reader and writer and must hear that the number
    // is free before the very next socket() reuses it. Closed once: fd_ is -1 afterwards.
    void close_socket() {
        if (fd_ < 0) return;
        loop_.remove_and_close(fd_);
        fd_ = -1;
    }

    // What stage 01 kept in local variables, and stage 05 will keep in a coroutine frame:
    EventLoop& loop_;
    const Request& request_;
    const Options& options_;
    Result& result_;  // this request's slot in fetch_all's results; its timing fills in as we go
    Callback done_;            // called once, when result_ is final
    int fd_ = -1;
    std::size_t next_address_ = 0;        // the address after the one being tried
    const char* failed_call_ = "connect";  // why the last address failed, for the message
    int error_ = 0;
    std::string request_bytes_;
    std::size_t sent_ = 0;                // how much of request_bytes_ the kernel has taken
    ResponseParser parser_;
    TimerHandle timeout_;
};

// Runs a list of requests on one loop, at most `limit_` at once. The 500 Lines crawler kept this
// in globals (the selector, the URLs still to do, a `stopped` flag for its loop); here it is one
// object, and the loop needs no flag: run() returns when no Fetcher is waiting for anything.
class Batch {
public:
    Batch(const std::vector<Request>& requests, const Options& options)
        : requests_(requests), options_(options), results_(requests.size()),
          fetchers_(requests.size()),
          limit_(options.concurrency == 0 ? requests.size() : options.concurrency) {}

    std::vector<Result> run() {
        start_more();
        loop_.run();  // returns when the last Fetcher is finished: nothing is left to wait for
        return std::move(results_);
    }

private:
    void start_more() {
        while (in_flight_ < limit_ && next_ < requests_.size()) {
            const std::size_t index = next_++;
            ++in_flight_;
            fetchers_[index] = std::make_unique<Fetcher>(
                loop_, requests_[index], options_, results_[index], [this, index] { done(index); });
            fetchers_[index]->start();
        }
    }

    // Called by a Fetcher from inside one of its own callbacks, or from inside start() when it
    // fails at once. So the Fetcher is not destroyed here, under its own feet, and the next
    // request is not started here either: with a run of immediate failures that would recurse once
    // per request. Both wait for the next turn of the loop.
    void done(std::size_t index) {
        --in_flight_;
        if (options_.on_result) options_.on_result(index, results_[index]);
        loop_.call_soon([this, index] {
            explain::runs("the call_soon of done(): free the Fetcher, start the next request", -1);
            fetchers_[index].reset();
            start_more();
        });
    }

    const std::vector<Request>& requests_;
    const Options& options_;
    std::vector<Result> results_;
    EventLoop loop_;  // declared before fetchers_, so it is destroyed after them
    std::vector<std::unique_ptr<Fetcher>> fetchers_;  // by request index; empty when not running
    std::size_t limit_;
    std::size_t next_ = 0;  // the next request to start
    std::size_t in_flight_ = 0;
};

}  // namespace

std::vector<Result> fetch_all(const std::vector<Request>& requests, const Options& options) {
    return Batch(requests, options).run();
}

}  // namespace sixways::callbacks
