// Sockets for the loop: an RAII socket and three calls that wait for it the way stage 01 blocked
// on it (asyncio: loop.sock_connect, loop.sock_sendall, loop.sock_recv), and a fourth that only
// waits until there is something to read.
//
//   Socket socket = Socket::open(loop, address.family());  // non-blocking; closed by ~Socket
//   co_await sock_connect(loop, socket.fd(), address);
//   co_await sock_sendall(loop, socket.fd(), request);
//   co_await wait_readable(loop, socket.fd());              // the answer has begun to arrive
//   std::string data = co_await sock_recv(loop, socket.fd(), 16 * 1024);   // "" at end of stream
//
// The three make their system call at once, and return a future that is done already if the call
// did not block. Otherwise the future registers a reader (or writer) with the loop, and the loop's
// callback makes the call again each time the descriptor is ready, until it goes through; then the
// registration is removed and the future completes. wait_readable registers its reader straight
// away. None of them is a coroutine, and none costs a task: one small object per wait, the
// future's own state.
//
// The registration lives exactly as long as the wait: it is removed when the future completes,
// when it is cancelled (a cancelled task cancels the future it waits on), and when the future is
// destroyed (with the frame of a task destroyed while it waited). A wait removes only its own
// registration, never a newer one on the same descriptor number. Like every future, one of these
// must not outlive its loop.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>

#include "06_coroutines/event_loop.hpp"
#include "06_coroutines/future.hpp"
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
    Socket& operator=(Socket&& other) noexcept {
        if (this != &other) {
            close();
            loop_ = other.loop_;
            fd_ = std::exchange(other.fd_, -1);
        }
        return *this;
    }
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

// Connects the non-blocking socket `fd` to `address`. Fails with SocketError("connect", ...).
Future<void> sock_connect(EventLoop& loop, int fd, const Address& address);

// Sends all of `data` (MSG_NOSIGNAL: a peer that has closed gives EPIPE, not a SIGPIPE that kills
// the process). Fails with SocketError("send", ...).
Future<void> sock_sendall(EventLoop& loop, int fd, std::string data);

// Receives what has arrived, up to `max_bytes`, waiting until something has. The result is "" when
// the peer has closed its end. Fails with SocketError("recv", ...), e.g. for a reset.
Future<std::string> sock_recv(EventLoop& loop, int fd, std::size_t max_bytes);

// Done when `fd` is readable (bytes to read, the end of the stream, or an error to collect), without
// reading anything and without a try first. For a wait whose first try would be wasted: a client
// that has just sent its request is waiting for a server that has not answered yet. (trio calls it
// wait_readable; asyncio code gets it from loop.add_reader and a future.)
Future<void> wait_readable(EventLoop& loop, int fd);

}  // namespace sixways::coroutines
