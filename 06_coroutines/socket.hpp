// Sockets for the loop: an RAII socket and three coroutines that wait for it the way stage 01
// blocked on it (asyncio: loop.sock_connect, loop.sock_sendall, loop.sock_recv).
//
//   Socket socket = Socket::open(address.family());      // non-blocking; closed by ~Socket
//   co_await sock_connect(loop, socket.fd(), address);
//   co_await sock_sendall(loop, socket.fd(), request);
//   std::string data = co_await sock_recv(loop, socket.fd(), 16 * 1024);   // "" at end of stream
//
// Each tries the system call first and waits only if it would block: it registers a reader (or
// writer) whose callback completes a Future, co_awaits the Future, and removes the registration
// when the wait ends, however it ends: woken, cancelled (CancelledError from the co_await), or
// destroyed with its task. So a cancelled wait leaves nothing registered with epoll, and a socket
// is never closed while the loop still watches it.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>

#include "06_coroutines/event_loop.hpp"
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

// Owns one descriptor and closes it exactly once: when destroyed (also when the coroutine frame
// that holds it is destroyed), or by close(). Move-only.
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
    Socket(const Socket&) = delete;
    Socket& operator=(const Socket&) = delete;
    ~Socket() { close(); }

    // A new non-blocking TCP socket (close-on-exec). Throws SocketError("socket", errno): EMFILE
    // when this process has no descriptor left.
    static Socket open(int family);

    int fd() const { return fd_; }
    explicit operator bool() const { return fd_ >= 0; }
    // Never retried: Linux frees the descriptor even when close() reports an error, and a second
    // close() could hit a descriptor that was reused meanwhile.
    void close();

private:
    int fd_ = -1;
};

// Connects the non-blocking socket `fd` to `address`. Throws SocketError("connect", ...).
Task<void> sock_connect(EventLoop& loop, int fd, Address address);

// Sends all of `data` (MSG_NOSIGNAL: a peer that has closed gives EPIPE, not a SIGPIPE that kills
// the process). Throws SocketError("send", ...).
Task<void> sock_sendall(EventLoop& loop, int fd, std::string data);

// Receives what has arrived, up to `max_bytes`, waiting until something has. Returns "" when the
// peer has closed its end. Throws SocketError("recv", ...), e.g. for a reset.
Task<std::string> sock_recv(EventLoop& loop, int fd, std::size_t max_bytes);

}  // namespace sixways::coroutines
