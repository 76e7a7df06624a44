#include "06_coroutines/socket.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <optional>
#include <utility>

#include "common/fetch.hpp"

namespace sixways::coroutines {

namespace {

enum class Interest { readable, writable };

// What the socket calls share: the state of a future that one descriptor completes. watch()
// registers a reader (or writer); the loop then calls try_now() on every turn in which the
// descriptor is ready, and on_ready() makes the system call, which either would block (wait for
// the next turn) or ends the wait with succeed() or an exception. asyncio's loop.sock_recv is built
// the same way: its reader callback makes the recv() itself.
template <class T>
class SocketWait : public detail::FutureState<T> {
public:
    SocketWait(EventLoop& loop, int fd, Interest interest)
        : detail::FutureState<T>(loop), fd_(fd), interest_(interest) {}
    ~SocketWait() override { stop_watching(); }  // the frame that awaited us is gone
    SocketWait(const SocketWait&) = delete;
    SocketWait& operator=(const SocketWait&) = delete;

    // One try: the call may well not block (a reply already there, room in the send buffer). A
    // failure fails the future; whoever awaits it gets the SocketError from co_await.
    void try_now() {
        if (this->done()) return stop_watching();  // set or cancelled from outside meanwhile
        try {
            on_ready();
        } catch (const SocketError&) {
            stop_watching();
            this->set_exception(std::current_exception());
        }
    }
    // Tries again on every turn the descriptor is ready, until the call goes through. The callback
    // refers to this object: its destructor removes the callback before the object is gone.
    void watch() {
        auto on_ready = [this] { try_now(); };
        EventLoop& loop = this->loop();
        registration_ = interest_ == Interest::readable ? loop.add_reader(fd_, on_ready) : loop.add_writer(fd_, on_ready);
    }
    bool cancel() override {
        stop_watching();  // now, not on a later turn: the socket may be closed before then
        return detail::FutureState<T>::cancel();
    }

protected:
    // Makes the system call. Returns without completing the future if it would block; throws
    // SocketError if it failed.
    virtual void on_ready() = 0;
    template <class... Value>
    void succeed(Value&&... value) {
        stop_watching();
        this->set_result(std::forward<Value>(value)...);
    }
    int fd() const { return fd_; }

private:
    // Removes our registration only: if the socket was closed and its number given to a new
    // socket that another task now waits on, that wait is not ours to remove.
    void stop_watching() { this->loop().remove(std::exchange(registration_, Registration{})); }

    int fd_;
    Interest interest_;
    Registration registration_;
};

// Future's constructor from a state is for Future's own family; this lets the calls below hand
// out their SocketWait as a plain Future<T>.
template <class T>
class SocketFuture : public Future<T> {
public:
    explicit SocketFuture(std::shared_ptr<detail::FutureState<T>> state) : Future<T>(std::move(state)) {}
};

// Tries at once, and waits only if the call would block.
template <class T, class Wait>
Future<T> try_then_watch(std::shared_ptr<Wait> wait) {
    wait->try_now();
    if (!wait->done()) wait->watch();
    return SocketFuture<T>(std::move(wait));
}

// One recv() into a buffer on this function's stack: a buffer kept in the wait would cost
// max_bytes of memory per connection for as long as it is open.
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

// The handshake has ended when the socket becomes writable, and SO_ERROR then says how.
class ConnectWait final : public SocketWait<void> {
public:
    ConnectWait(EventLoop& loop, int fd) : SocketWait(loop, fd, Interest::writable) {}

private:
    void on_ready() override {
        const int error = connect_error(fd());
        if (error != 0) throw SocketError("connect", error);
        succeed();
    }
};

class SendAllWait final : public SocketWait<void> {
public:
    SendAllWait(EventLoop& loop, int fd, std::string data)
        : SocketWait(loop, fd, Interest::writable), data_(std::move(data)) {}

private:
    void on_ready() override {
        while (sent_ < data_.size()) {
            const ssize_t n = ::send(fd(), data_.data() + sent_, data_.size() - sent_, MSG_NOSIGNAL);
            if (n >= 0) {
                sent_ += static_cast<std::size_t>(n);
                continue;
            }
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) return;  // the send buffer is full: wait for room
            throw SocketError("send", errno);
        }
        succeed();
    }

    std::string data_;
    std::size_t sent_ = 0;
};

class RecvWait final : public SocketWait<std::string> {
public:
    RecvWait(EventLoop& loop, int fd, std::size_t max_bytes)
        : SocketWait(loop, fd, Interest::readable), max_bytes_(max_bytes) {}

private:
    void on_ready() override {
        std::optional<std::string> data = try_recv(fd(), max_bytes_);
        if (data) succeed(std::move(*data));
    }

    std::size_t max_bytes_;
};

// Readable is all it waits for: the call that follows (sock_recv) does the reading.
class ReadableWait final : public SocketWait<void> {
public:
    ReadableWait(EventLoop& loop, int fd) : SocketWait(loop, fd, Interest::readable) {}

private:
    void on_ready() override { succeed(); }
};

}  // namespace

SocketError::SocketError(const char* call, int error_number)
    : std::runtime_error(errno_message(call, error_number)), error_number_(error_number) {}

void Socket::close() {
    if (fd_ < 0) return;
    loop_->remove_reader(fd_);
    loop_->remove_writer(fd_);
    ::close(std::exchange(fd_, -1));  // never retried: Linux frees the number even on an error
}

Socket Socket::open(EventLoop& loop, int family) {
    const int fd = ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) throw SocketError("socket", errno);
    return Socket(loop, fd);
}

Future<void> sock_connect(EventLoop& loop, int fd, const Address& address) {
    auto wait = std::make_shared<ConnectWait>(loop, fd);
    // A non-blocking connect starts the handshake and returns at once: EINPROGRESS. (EINTR means
    // the same here: the handshake goes on.)
    if (::connect(fd, address.get(), address.length) == 0) {
        wait->set_result();
    } else if (errno != EINPROGRESS && errno != EINTR) {
        wait->set_exception(std::make_exception_ptr(SocketError("connect", errno)));
    } else {
        wait->watch();
    }
    return SocketFuture<void>(std::move(wait));
}

Future<void> sock_sendall(EventLoop& loop, int fd, std::string data) {
    return try_then_watch<void>(std::make_shared<SendAllWait>(loop, fd, std::move(data)));
}

Future<std::string> sock_recv(EventLoop& loop, int fd, std::size_t max_bytes) {
    return try_then_watch<std::string>(std::make_shared<RecvWait>(loop, fd, max_bytes));
}

Future<void> wait_readable(EventLoop& loop, int fd) {
    auto wait = std::make_shared<ReadableWait>(loop, fd);
    wait->watch();  // no try: on_ready() would succeed at once, readable or not
    return SocketFuture<void>(std::move(wait));
}

}  // namespace sixways::coroutines
