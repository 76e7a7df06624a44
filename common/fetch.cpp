// Helpers that keep error kinds and messages the same in all six stages, so the conformance suite
// and the report can compare them.
#include "common/fetch.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <string>
#include <system_error>
#include <utility>

#include "common/explain.hpp"

namespace sixways {

const char* to_string(ErrorKind kind) {
    switch (kind) {
        case ErrorKind::none: return "none";
        case ErrorKind::resolve: return "resolve";
        case ErrorKind::connect: return "connect";
        case ErrorKind::send: return "send";
        case ErrorKind::receive: return "receive";
        case ErrorKind::timeout: return "timeout";
        case ErrorKind::protocol: return "protocol";
        case ErrorKind::limit: return "limit";
    }
    return "unknown";  // not reached: every enumerator is handled above
}

void Result::fail(ErrorKind kind, std::string message) {
    error = kind;
    error_message = std::move(message);
    timing.done = Clock::now();
}

void fail_out_of_memory(Result& result) noexcept { result.fail(ErrorKind::limit, "out of memory"); }

ErrorKind kind_for_errno(int error_number, ErrorKind otherwise) {
    switch (error_number) {
        case EMFILE:         // this process has no descriptor left (RLIMIT_NOFILE)
        case ENFILE:         // the whole system has no descriptor left
        case ENOBUFS:        // the kernel has no memory left for socket buffers
        case ENOMEM:         // no memory (also what a failed thread stack allocation can report)
        case EAGAIN:         // pthread_create: no thread left (RLIMIT_NPROC or kernel limits)
        case EADDRNOTAVAIL:  // connect: no ephemeral port left towards this destination
            return ErrorKind::limit;
        default:
            return otherwise;
    }
}

std::string errno_message(const char* call, int error_number) {
    // generic_category().message() is strerror's text ("Connection refused"). glibc's strerror is
    // safe to call from several threads at once (since 2.32), which stage 02 needs.
    return std::string(call) + ": " + std::generic_category().message(error_number);
}

std::string timeout_message(Duration timeout, const char* phase) {
    return "timeout after " + format_duration(timeout) + " while " + phase;
}

int connect_error(int fd) {
    int error = 0;
    socklen_t length = sizeof error;
    if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) < 0) return errno;
    explain::call("getsockopt", fd, error);
    return error;
}

const char* phase_name(const Timing& timing) {
    if (timing.connected == Clock::time_point{}) return "connecting";
    if (timing.sent == Clock::time_point{}) return "sending";
    if (timing.first_byte == Clock::time_point{}) return "waiting";
    return "receiving";
}

}  // namespace sixways
