// A file descriptor that closes itself: a socket, or an epoll instance.
#pragma once

#include <unistd.h>

#include <utility>

#include "common/explain.hpp"

namespace sixways {

// Owns one descriptor and closes it exactly once: when it is destroyed (so on whichever path its
// scope is left), when another descriptor is moved into it, or by close(). Move-only. A
// default-constructed Descriptor, or one made from a failed call's -1, owns nothing.
class Descriptor {
public:
    Descriptor() = default;
    explicit Descriptor(int fd) : fd_(fd) {}
    Descriptor(Descriptor&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    Descriptor& operator=(Descriptor&& other) noexcept {
        if (this != &other) {
            close();
            fd_ = std::exchange(other.fd_, -1);
        }
        return *this;
    }
    ~Descriptor() { close(); }

    int fd() const { return fd_; }
    explicit operator bool() const { return fd_ >= 0; }

    // Never retried: Linux releases the descriptor even when close() reports an error, and a second
    // close() could close a descriptor that was meanwhile reused for something else.
    void close() {
        if (fd_ < 0) return;
        explain::call("close", fd_, 0);
        ::close(std::exchange(fd_, -1));
    }

private:
    int fd_ = -1;
};

}  // namespace sixways
