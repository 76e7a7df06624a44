#include "tests/reference_fetch.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <string_view>

namespace sixways::conformance_reference {

namespace {

// Closes a socket exactly once, whichever way fetch_one leaves.
class Socket {
public:
    explicit Socket(int fd) : fd_(fd) {}
    ~Socket() {
        if (fd_ >= 0) ::close(fd_);
    }
    Socket(const Socket&) = delete;
    Socket& operator=(const Socket&) = delete;
    int get() const { return fd_; }

private:
    int fd_;
};

// Waits until `fd` is ready for `events` or the deadline passes; false means the deadline passed.
// An error condition on the socket also counts as ready: the next call reports it.
bool wait_until(int fd, short events, Clock::time_point deadline) {
    for (;;) {
        const int left_ms = milliseconds_until(Clock::now(), deadline);
        if (left_ms == 0) return false;
        pollfd entry{fd, events, 0};
        const int ready = ::poll(&entry, 1, left_ms);
        if (ready > 0) return true;
        if (ready < 0 && errno != EINTR) return true;
    }
}

class Attempt {
public:
    Attempt(const Request& request, const Options& options)
        : request_(request), options_(options), parser_(options.body_cap, options.keep_headers) {}

    Result run() {
        result_.timing.start = Clock::now();
        deadline_ = deadline_after(result_.timing.start, options_.timeout);
        const int fd = connect_to_any();
        if (fd >= 0) {
            Socket socket(fd);
            if (send_request(fd)) receive_response(fd);
        }
        result_.timing.done = Clock::now();
        return std::move(result_);
    }

private:
    void fail(ErrorKind kind, std::string message) {
        result_.error = kind;
        result_.error_message = std::move(message);
    }

    // Tries each address in turn; returns a connected socket, or -1 with the last error recorded.
    int connect_to_any() {
        if (request_.addresses.empty()) fail(ErrorKind::resolve, "resolve: no address to connect to");
        for (const Address& address : request_.addresses) {
            const int fd = ::socket(address.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
            if (fd < 0) {  // e.g. EAFNOSUPPORT: the next address may be of another family
                fail(kind_for_errno(errno, ErrorKind::connect), errno_message("socket", errno));
                continue;
            }
            int error = 0;
            if (::connect(fd, address.get(), address.length) != 0) error = errno;
            if (error == EINPROGRESS) {
                if (!wait_until(fd, POLLOUT, deadline_)) {
                    ::close(fd);
                    fail(ErrorKind::timeout, timeout_message(options_.timeout, "connecting"));
                    return -1;
                }
                socklen_t length = sizeof error;
                ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
            }
            if (error == 0) {
                result_.timing.connected = Clock::now();
                result_.error = ErrorKind::none;
                result_.error_message.clear();
                return fd;
            }
            ::close(fd);
            fail(kind_for_errno(error, ErrorKind::connect), errno_message("connect", error));
        }
        return -1;
    }

    bool send_request(int fd) {
        const std::string wire = build_get_request(request_.url);
        std::size_t sent = 0;
        while (sent < wire.size()) {
            const ssize_t n = ::send(fd, wire.data() + sent, wire.size() - sent, MSG_NOSIGNAL);
            if (n >= 0) {
                sent += static_cast<std::size_t>(n);
            } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
                if (!wait_until(fd, POLLOUT, deadline_)) {
                    fail(ErrorKind::timeout, timeout_message(options_.timeout, "sending"));
                    return false;
                }
            } else if (errno != EINTR) {
                fail(kind_for_errno(errno, ErrorKind::send), errno_message("send", errno));
                return false;
            }
        }
        result_.timing.sent = Clock::now();
        return true;
    }

    void receive_response(int fd) {
        std::string buffer(64 * 1024, '\0');
        bool got_a_byte = false;
        for (;;) {
            const ssize_t n = ::recv(fd, buffer.data(), buffer.size(), 0);
            if (n > 0) {
                if (!got_a_byte) result_.timing.first_byte = Clock::now();
                got_a_byte = true;
                const auto status = parser_.feed(std::string_view(buffer.data(), static_cast<std::size_t>(n)));
                if (status == ResponseParser::Status::complete) break;
                if (status == ResponseParser::Status::error) return fail(ErrorKind::protocol, parser_.error());
            } else if (n == 0) {
                if (parser_.finish() == ResponseParser::Status::complete) break;
                return fail(ErrorKind::receive, parser_.error());
            } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
                if (!wait_until(fd, POLLIN, deadline_)) {
                    return fail(ErrorKind::timeout,
                                timeout_message(options_.timeout, got_a_byte ? "receiving" : "waiting"));
                }
            } else if (errno != EINTR) {
                return fail(kind_for_errno(errno, ErrorKind::receive), errno_message("recv", errno));
            }
        }
        result_.response = parser_.take_response();
    }

    const Request& request_;
    const Options& options_;
    ResponseParser parser_;
    Clock::time_point deadline_;
    Result result_;
};

}  // namespace

std::vector<Result> fetch_all(const std::vector<Request>& requests, const Options& options) {
    std::vector<Result> results;
    results.reserve(requests.size());
    for (std::size_t i = 0; i < requests.size(); ++i) {
        results.push_back(Attempt(requests[i], options).run());
        if (options.on_result) options.on_result(i, results.back());
    }
    return results;
}

}  // namespace sixways::conformance_reference
