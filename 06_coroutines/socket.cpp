#include "06_coroutines/socket.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <optional>

#include "common/fetch.hpp"

namespace sixways::coroutines {

namespace {

enum class Interest { readable, writable };

// One wait for one descriptor: registers a reader (or writer) that completes `ready`, and removes
// it when destroyed. It lives in the frame of the coroutine that waits, so it is destroyed however
// the wait ends. Not movable: the callback refers to `ready` inside it.
class IoWait {
public:
    IoWait(EventLoop& loop, int fd, Interest interest) : loop_(loop), fd_(fd), interest_(interest), ready_(loop) {
        // The loop calls this on every turn the descriptor is ready, until we are destroyed; the
        // task runs only on a later step, hence the check.
        auto on_ready = [this] {
            if (!ready_.done()) ready_.set_result();
        };
        if (interest == Interest::readable) {
            loop.add_reader(fd, on_ready);
        } else {
            loop.add_writer(fd, on_ready);
        }
    }
    ~IoWait() {
        if (interest_ == Interest::readable) {
            loop_.remove_reader(fd_);
        } else {
            loop_.remove_writer(fd_);
        }
    }
    IoWait(const IoWait&) = delete;
    IoWait& operator=(const IoWait&) = delete;

    Future<void>& ready() { return ready_; }

private:
    EventLoop& loop_;
    int fd_;
    Interest interest_;
    Future<void> ready_;
};

// One recv() into a buffer on this (ordinary, not coroutine) function's stack: a buffer in the
// coroutine frame would cost max_bytes of memory per connection for as long as it is open.
// nullopt: nothing there yet (EAGAIN).
std::optional<std::string> try_recv(int fd, std::size_t max_bytes) {
    char buffer[64 * 1024];
    const std::size_t size = max_bytes < sizeof buffer ? max_bytes : sizeof buffer;
    for (;;) {
        const ssize_t n = ::recv(fd, buffer, size, 0);
        if (n >= 0) return std::string(buffer, static_cast<std::size_t>(n));
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return std::nullopt;
        throw SocketError("recv", errno);
    }
}

// The outcome of a non-blocking connect, once the socket is writable: 0 or an errno.
int connect_error(int fd) {
    int error = 0;
    socklen_t length = sizeof error;
    if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) < 0) return errno;
    return error;
}

}  // namespace

SocketError::SocketError(const char* call, int error_number)
    : std::runtime_error(errno_message(call, error_number)), error_number_(error_number) {}

Socket Socket::open(int family) {
    const int fd = ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) throw SocketError("socket", errno);
    return Socket(fd);
}

void Socket::close() {
    if (fd_ >= 0) ::close(std::exchange(fd_, -1));
}

Task<void> sock_connect(EventLoop& loop, int fd, Address address) {
    // A non-blocking connect starts the handshake and returns at once: EINPROGRESS. (EINTR means
    // the same here: the handshake goes on.) The socket becomes writable when it has ended, and
    // SO_ERROR then says how.
    if (::connect(fd, address.get(), address.length) == 0) co_return;
    if (errno != EINPROGRESS && errno != EINTR) throw SocketError("connect", errno);
    IoWait writable(loop, fd, Interest::writable);
    co_await writable.ready();
    const int error = connect_error(fd);
    if (error != 0) throw SocketError("connect", error);
}

Task<void> sock_sendall(EventLoop& loop, int fd, std::string data) {
    std::size_t sent = 0;
    while (sent < data.size()) {
        const ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
        if (n >= 0) {
            sent += static_cast<std::size_t>(n);
            continue;
        }
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) throw SocketError("send", errno);
        IoWait writable(loop, fd, Interest::writable);  // the send buffer is full: wait for room
        co_await writable.ready();
    }
}

Task<std::string> sock_recv(EventLoop& loop, int fd, std::size_t max_bytes) {
    for (;;) {
        std::optional<std::string> data = try_recv(fd, max_bytes);
        if (data) co_return std::move(*data);
        IoWait readable(loop, fd, Interest::readable);
        co_await readable.ready();
    }
}

}  // namespace sixways::coroutines
