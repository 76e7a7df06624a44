// How many recv() calls a request costs, counted by a stand-in for the C library's recv: a definition
// of a C library function in the program itself takes precedence over the library's (as
// tests/support/epoll_refusal.cpp does for epoll_ctl), so every recv of this test program comes here
// first. Counted per thread: the in-process lab server's own calls are not ours.
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "06_coroutines/fetch.hpp"
#include "lab/labserver.hpp"
#include "tests/support/stage_support.hpp"

namespace {

thread_local int recv_calls = 0;

}  // namespace

extern "C" ssize_t recv(int fd, void* buffer, size_t size, int flags) {
    ++recv_calls;
    return static_cast<ssize_t>(::syscall(SYS_recvfrom, fd, buffer, size, flags, nullptr, nullptr));
}

namespace sixways::coroutines {
namespace {

using namespace std::chrono_literals;
using testing_support::expect_each_numbered_body;
using testing_support::numbered_requests;
using testing_support::on_loopback;
using testing_support::with_timeout;

// The server answers 50 ms after the request, so a recv() right after sending would find nothing.
// The fetch waits for the socket to be readable first: one recv() for an answer that arrives in one
// piece, where a try first would make two.
TEST(RecvCount, ARequestWaitsUntilItsAnswerIsThereBeforeItsFirstRecv) {
    lab::LabServer server(on_loopback(50ms));
    server.start();
    const std::vector<Request> requests = numbered_requests(server, 3);
    const int before = recv_calls;
    const std::vector<Result> results = fetch_all(requests, with_timeout(5s));
    expect_each_numbered_body(results);
    EXPECT_EQ(recv_calls - before, 3);
}

}  // namespace
}  // namespace sixways::coroutines
