// Sockets for the loop: an RAII socket, two futures that wait until a descriptor is ready, and
// three coroutines that do what stage 01 did with blocking calls (asyncio: loop.sock_connect,
// loop.sock_sendall, loop.sock_recv).
//
//   Socket socket = Socket::open(loop, address.family());  // non-blocking; closed by ~Socket
//   co_await sock_connect(loop, socket.fd(), address);
//   co_await sock_sendall(loop, socket.fd(), request);
//   co_await wait_readable(loop, socket.fd());              // the answer has begun to arrive
//   std::string data = co_await sock_recv(loop, socket.fd(), 16 * 1024);   // "" at end of stream
//
// Each coroutine makes its system call at once: it often does not block (a reply already there,
// room in the send buffer). Only when it would block does it co_await wait_readable or
// wait_writable and try again. Those two are the one place where a socket meets the loop: a future
// that registers a reader (or writer) whose callback completes it. The registration lives exactly
// as long as the wait: removed when the future completes, when it is cancelled (a cancelled task
// cancels the future it waits on), and when it is destroyed (with the frame of a task destroyed
// while it waited). A wait removes only its own registration, never a newer one on the same
// descriptor number.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>

#include "06_coroutines/event_loop.hpp"
#include "06_coroutines/future.hpp"
#include "06_coroutines/task.hpp"
#include "common/address.hpp"

namespace sixways::coroutines {

// A failed socket call: what() is errno_message's "connect: Connection refused".
class SocketError : public std::runtime_error {
public:
    SocketError(const char* call, int error_number);
    int error_number() const { return error_number_; }

private:
    int error_number_;
};

// Owns one descriptor and closes it exactly once: when destroyed (also with the frame of a task
// destroyed while it waited), or by close(). Its reader and writer, if any, are removed first: the
// loop must not watch a number that the kernel may give to the next socket. Move-only.
class Socket {
public:
    Socket() = default;
    Socket(EventLoop& loop, int fd) : loop_(&loop), fd_(fd) {}
    Socket(Socket&& other) noexcept : loop_(other.loop_), fd_(std::exchange(other.fd_, -1)) {}
    Socket& operator=(Socket&&) = delete;  // nothing needs it: a Socket is made, moved out, closed
    Socket(const Socket&) = delete;
    Socket& operator=(const Socket&) = delete;
    ~Socket() { close(); }

    // A new non-blocking TCP socket (close-on-exec) for `loop`. Throws SocketError("socket",
    // errno): EMFILE when this process has no descriptor left.
    static Socket open(EventLoop& loop, int family);

    int fd() const { return fd_; }
    explicit operator bool() const { return fd_ >= 0; }
    void close();

private:
    EventLoop* loop_ = nullptr;
    int fd_ = -1;
};

// Done when `fd` is readable (bytes, the end of the stream, or an error to collect), or writable.
// They read and write nothing. (trio calls them wait_readable and wait_writable.) Throws
// std::system_error if epoll refuses the descriptor.
Future<void> wait_readable(EventLoop& loop, int fd);
Future<void> wait_writable(EventLoop& loop, int fd);

// Connects the non-blocking socket `fd` to `address`. Throws SocketError("connect", ...).
Coroutine<void> sock_connect(EventLoop& loop, int fd, Address address);

// Sends all of `data` (MSG_NOSIGNAL: a peer that has closed gives EPIPE, not a SIGPIPE that kills
// the process). Throws SocketError("send", ...).
Coroutine<void> sock_sendall(EventLoop& loop, int fd, std::string data);

// What has arrived, up to `max_bytes`, waiting until something has; "" when the peer has closed
// its end. Throws SocketError("recv", ...), e.g. for a reset.
Coroutine<std::string> sock_recv(EventLoop& loop, int fd, std::size_t max_bytes);

}  // namespace sixways::coroutines
