// EPOLL_CTL_ADD fails with ENOSPC once this user watches as many descriptors as
// /proc/sys/fs/epoll/max_user_watches allows, or with ENOMEM. No test can reach that limit (it is
// counted across the whole system, and large), so this file stands in for the kernel: a definition
// of a C library function in the program itself takes precedence over the library's, and so every
// epoll_ctl call of a test program that links this file comes to the one below first. recv()
// comes here too, only to be counted: how many calls a request costs is part of each loop's lesson.
#include "tests/support/epoll_refusal.hpp"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <vector>

#include "lab/labserver.hpp"
#include "tests/support/stage_support.hpp"

namespace {

// How many more EPOLL_CTL_ADDs made by this thread fail with ENOSPC. Counted per thread, so that
// the in-process lab server, whose epoll loop runs on a thread of its own, is never refused.
thread_local int adds_to_refuse = 0;
thread_local sixways::testing_support::EpollCtlCalls calls;
thread_local int recv_calls = 0;

}  // namespace

extern "C" ssize_t recv(int fd, void* buffer, size_t size, int flags) {
    ++recv_calls;
    return static_cast<ssize_t>(::syscall(SYS_recvfrom, fd, buffer, size, flags, nullptr, nullptr));
}

extern "C" int epoll_ctl(int epoll_fd, int operation, int fd, epoll_event* event) noexcept {
    ++(operation == EPOLL_CTL_ADD ? calls.add : operation == EPOLL_CTL_MOD ? calls.mod : calls.del);
    if (operation == EPOLL_CTL_ADD && adds_to_refuse > 0) {
        --adds_to_refuse;
        errno = ENOSPC;
        return -1;
    }
    return static_cast<int>(::syscall(SYS_epoll_ctl, epoll_fd, operation, fd, event));
}

namespace sixways::testing_support {

EpollCtlCalls epoll_ctl_calls() { return calls; }

void expect_calls_per_request(const FetchAll& fetch_all, int recvs_per_request,
                              int mods_per_request) {
    using namespace std::chrono_literals;
    lab::LabServer server(on_loopback(50ms));
    server.start();
    const std::vector<Request> requests = numbered_requests(server, 3);
    const EpollCtlCalls before = calls;
    const int recvs_before = recv_calls;
    const std::vector<Result> results = fetch_all(requests, with_timeout(5s));
    expect_each_numbered_body(results);
    EXPECT_EQ(calls.add - before.add, 3);
    EXPECT_EQ(calls.mod - before.mod, 3 * mods_per_request);
    EXPECT_EQ(calls.del - before.del, 0);
    EXPECT_EQ(recv_calls - recvs_before, 3 * recvs_per_request);
}

void expect_a_refused_socket_fails_only_its_request(const FetchAll& fetch_all) {
    using namespace std::chrono_literals;
    const int before = open_descriptors();
    {
        lab::LabServer server(on_loopback(0ms));
        server.start();
        const std::vector<Request> requests = numbered_requests(server, 3);
        adds_to_refuse = 1;  // the first request's socket
        const std::vector<Result> results = fetch_all(requests, with_timeout(5s, 1));
        adds_to_refuse = 0;
        ASSERT_EQ(results.size(), requests.size());
        EXPECT_EQ(results[0].error, ErrorKind::limit);
        EXPECT_EQ(results[0].error_message, errno_message("epoll_ctl", ENOSPC));
        for (std::size_t k = 1; k < results.size(); ++k) {
            EXPECT_TRUE(results[k].ok()) << k << ": " << results[k].error_message;
        }
    }
    EXPECT_EQ(open_descriptors(), before);  // the refused socket was closed too
}

}  // namespace sixways::testing_support
