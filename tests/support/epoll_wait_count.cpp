// A definition of a C library function in the program itself takes precedence over the library's,
// so every epoll_wait call of a test program that links this file comes to the one below first.
#include "tests/support/epoll_wait_count.hpp"

#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "lab/labserver.hpp"
#include "tests/support/stage_support.hpp"

namespace {

// The epoll_wait calls this thread has made (the in-process lab server's thread is not counted).
thread_local int epoll_wait_calls = 0;

}  // namespace

extern "C" int epoll_wait(int epoll_fd, epoll_event* events, int max_events, int timeout) {
    ++epoll_wait_calls;
    return static_cast<int>(::syscall(SYS_epoll_pwait, epoll_fd, events, max_events, timeout, nullptr, 0));
}

namespace sixways::testing_support {

int epoll_wait_calls_on_this_thread() { return epoll_wait_calls; }

void expect_few_epoll_waits_while_the_server_thinks(const FetchAll& fetch_all) {
    using namespace std::chrono_literals;
    lab::LabServer server(on_loopback(300ms));
    server.start();
    const std::vector<Request> requests = numbered_requests(server, 3);
    const int before = epoll_wait_calls;

    std::vector<Result> results;
    {
        const Watchdog watchdog("fetch_all", 60s);
        results = fetch_all(requests, {});
    }

    expect_each_numbered_body(results);
    EXPECT_GE(epoll_wait_calls - before, 2);
    EXPECT_LE(epoll_wait_calls - before, 6) << "the loop woke up with nothing to do";
}

}  // namespace sixways::testing_support
