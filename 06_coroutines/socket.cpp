#include "06_coroutines/socket.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <optional>

#include "common/explain.hpp"
#include "common/fetch.hpp"

namespace sixways::coroutines {

namespace {

// The state of wait_readable's (or wait_writable's) future: it registers a reader (or writer)
// whose callback completes the future, and it takes its registration away however the wait ends.
class ReadinessWait final : public detail::FutureState<void> {
public:
    ReadinessWait(EventLoop& loop, int fd, bool writable) : FutureState(loop), fd_(fd) {
        // The callback refers to this object: the destructor removes it before the object is gone.
        // It does nothing but complete this future, so the loop runs it as soon as it sees the
        // event, and the waiting task steps in that same turn (event_loop.cpp, run_once).
        auto ready = [this] {
            stop_watching();
            set_result();
        };
        explain::waits_for(fd, writable);
        handle_ = loop.add_socket_wait(fd, writable, ready);
    }
    ~ReadinessWait() override { stop_watching(); }  // the frame that awaited us is gone
    bool cancel() override {
        stop_watching();  // now: left registered, a readiness would set_result on a cancelled future
        return FutureState::cancel();
    }

private:
    void stop_watching() { loop().remove(fd_, std::exchange(handle_, nullptr)); }
    int fd_;
    std::shared_ptr<Handle> handle_;
};

// One recv() into a buffer on this function's stack (a buffer kept in the coroutine's frame would
// cost max_bytes of memory for as long as the frame lives). nullopt: nothing there yet.
std::optional<std::string> try_recv(int fd, std::size_t max_bytes) {
    char buffer[64 * 1024];
    const std::size_t size = max_bytes < sizeof buffer ? max_bytes : sizeof buffer;
    for (;;) {
        const ssize_t n = ::recv(fd, buffer, size, 0);
        explain::call("recv", fd, n);
        if (n >= 0) return std::string(buffer, static_cast<std::size_t>(n));
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return std::nullopt;
        throw SocketError("recv", errno);
    }
}

}  // namespace

SocketError::SocketError(const char* call, int error_number)
    : std::runtime_error(errno_message(call, error_number)), error_number_(error_number) {}

void Socket::close() {
    if (fd_ < 0) return;
    loop_->remove_reader(fd_);
    loop_->remove_writer(fd_);
    explain::call("close", fd_, 0);
    ::close(std::exchange(fd_, -1));  // never retried: Linux frees the number even on an error
}

Socket Socket::open(EventLoop& loop, int family) {
    const int fd = ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) throw SocketError("socket", errno);
    return Socket(loop, fd);
}

Future<void> wait_readable(EventLoop& loop, int fd) {
    return Future<void>(std::make_shared<ReadinessWait>(loop, fd, false));
}

Future<void> wait_writable(EventLoop& loop, int fd) {
    return Future<void>(std::make_shared<ReadinessWait>(loop, fd, true));
}

Coroutine<void> sock_connect(EventLoop& loop, int fd, Address address) {
    // A non-blocking connect starts the handshake and returns at once with EINPROGRESS (EINTR
    // means the same here); the socket becomes writable when the handshake has ended, and SO_ERROR
    // then says how.
    const int connected = ::connect(fd, address.get(), address.length);
    explain::call("connect", fd, connected);
    if (connected == 0) co_return;
    if (errno != EINPROGRESS && errno != EINTR) throw SocketError("connect", errno);
    co_await wait_writable(loop, fd);
    if (const int error = connect_error(fd); error != 0) throw SocketError("connect", error);
}

Coroutine<void> sock_sendall(EventLoop& loop, int fd, std::string data) {
    std::size_t sent = 0;
    while (sent < data.size()) {
        const ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
        explain::call("send", fd, n);
        if (n >= 0) {
            sent += static_cast<std::size_t>(n);
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            co_await wait_writable(loop, fd);  // the send buffer is full: wait for room
        } else if (errno != EINTR) {
            throw SocketError("send", errno);
        }
    }
}

Coroutine<std::string> sock_recv(EventLoop& loop, int fd, std::size_t max_bytes) {
    for (;;) {
        if (std::optional<std::string> data = try_recv(fd, max_bytes)) co_return std::move(*data);
        co_await wait_readable(loop, fd);
    }
}

}  // namespace sixways::coroutines
