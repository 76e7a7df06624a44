// What the loop tells epoll, counted by tests/support/epoll_refusal.cpp, which stands in for the
// kernel's epoll_ctl in this program: every change at once (ADD, MOD, DEL), a number removed,
// closed and reused is watched again, a socket that epoll refuses fails only its own request, and
// what a request costs.
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <tuple>
#include <vector>

#include "06_coroutines/event_loop.hpp"
#include "06_coroutines/fetch.hpp"
#include "06_coroutines/sleep.hpp"
#include "06_coroutines/tests/helpers.hpp"
#include "lab/labserver.hpp"
#include "tests/support/epoll_refusal.hpp"

namespace sixways::coroutines {
namespace {

using namespace std::chrono_literals;
using testing_support::epoll_ctl_calls;
using testing_support::epoll_watches;
using testing_support::EpollCtlCalls;
using testing_support::expect_loop_is_clean;
using testing_support::socket_pair;

class EpollTest : public testing_support::LeakCheckedTest {};

// The calls made since `before`, as "ADD 1, MOD 0, DEL 0".
std::string since(const EpollCtlCalls& before) {
    const EpollCtlCalls now = epoll_ctl_calls();
    return "ADD " + std::to_string(now.add - before.add) + ", MOD " + std::to_string(now.mod - before.mod) +
           ", DEL " + std::to_string(now.del - before.del);
}

TEST(Coroutines, FailsARequestWhoseSocketEpollRefusesWithLimitAndGoesOn) {
    testing_support::expect_a_refused_socket_fails_only_its_request(&fetch_all);
}

// No batching: each add or remove is one epoll_ctl, made before the call returns.
TEST_F(EpollTest, EpollHearsOfEveryChangeAtOnce) {
    EventLoop loop;
    int ours = -1;
    int theirs = -1;
    std::tie(ours, theirs) = socket_pair();
    const EpollCtlCalls before = epoll_ctl_calls();
    loop.add_writer(ours, [] {});
    EXPECT_EQ(since(before), "ADD 1, MOD 0, DEL 0");  // new to epoll: ADD
    loop.add_reader(ours, [] {});
    EXPECT_EQ(since(before), "ADD 1, MOD 1, DEL 0");  // writable, and now readable too: MOD
    loop.remove_writer(ours);
    EXPECT_EQ(since(before), "ADD 1, MOD 2, DEL 0");  // readable only: MOD
    EXPECT_TRUE(epoll_watches(ours));
    loop.remove_reader(ours);
    EXPECT_EQ(since(before), "ADD 1, MOD 2, DEL 1");  // nothing left: DEL
    EXPECT_FALSE(epoll_watches(ours));
    expect_loop_is_clean(loop);
    ::close(ours);
    ::close(theirs);
}

// Removed, closed, and its number given to a new socket: the new socket starts afresh.
TEST_F(EpollTest, ADescriptorNumberRemovedClosedAndReusedIsWatchedAgain) {
    EventLoop loop;
    int old_socket = -1;
    int old_peer = -1;
    std::tie(old_socket, old_peer) = socket_pair();
    loop.add_reader(old_socket, [] {});
    loop.remove_reader(old_socket);
    ::close(old_socket);
    int fresh = -1;
    int fresh_peer = -1;
    std::tie(fresh, fresh_peer) = socket_pair();
    if (fresh != old_socket) {  // the lowest free number is usually the one just closed
        ASSERT_EQ(::dup2(fresh, old_socket), old_socket);
        ::close(fresh);
        fresh = old_socket;
    }
    int reads = 0;
    loop.add_reader(fresh, [&] {
        char byte;
        if (::read(fresh, &byte, 1) == 1) ++reads;
        loop.remove_reader(fresh);
    });
    ASSERT_EQ(::write(fresh_peer, "x", 1), 1);
    testing_support::run_within(loop, sleep(loop, 50ms));
    EXPECT_EQ(reads, 1);
    expect_loop_is_clean(loop);
    ::close(fresh);
    ::close(old_peer);
    ::close(fresh_peer);
}

// A whole request, from a server that answers after 50 ms: the connect's writer (ADD, then DEL
// when the connection is made), the send (no wait: the request fits in the send buffer), the
// wait for the answer (ADD, then DEL when it is there). No MOD: a socket never has a reader and a
// writer at once. And one recv, for an answer that arrives in one piece: exchange waits with
// wait_readable, so sock_recv's first try finds the answer.
TEST_F(EpollTest, ARequestCostsTwoAddsAndTwoDels) {
    lab::LabServer server(testing_support::on_loopback(50ms));
    server.start();
    const std::vector<Request> requests = testing_support::numbered_requests(server, 3);
    const EpollCtlCalls before = epoll_ctl_calls();
    const std::vector<Result> results = fetch_all(requests, testing_support::with_timeout(5s));
    testing_support::expect_each_numbered_body(results);
    EXPECT_EQ(since(before), "ADD 6, MOD 0, DEL 6");  // three requests
}

}  // namespace
}  // namespace sixways::coroutines
