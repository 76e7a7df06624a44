// What the loop tells epoll, counted by tests/support/epoll_refusal.cpp, which stands in for the
// kernel's epoll_ctl (and counts recv calls) in this program: changes go in one batch per turn, a
// socket closed through the loop costs no EPOLL_CTL_DEL, a socket closed behind the loop's back is
// still handled, a socket that epoll refuses fails only its own request, and a request makes one
// recv.
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <tuple>

#include "06_coroutines/event_loop.hpp"
#include "06_coroutines/fetch.hpp"
#include "06_coroutines/sleep.hpp"
#include "06_coroutines/tests/helpers.hpp"
#include "tests/support/epoll_refusal.hpp"

namespace sixways::coroutines {
namespace {

using namespace std::chrono_literals;
using testing_support::epoll_ctl_calls;
using testing_support::epoll_watches;
using testing_support::EpollCtlCalls;
using testing_support::expect_loop_is_clean;
using testing_support::run_one_turn;
using testing_support::socket_pair;

class EpollTest : public testing_support::LeakCheckedTest {};

// The calls made since `before`.
EpollCtlCalls since(const EpollCtlCalls& before) {
    const EpollCtlCalls now = epoll_ctl_calls();
    return {now.add - before.add, now.mod - before.mod, now.del - before.del};
}

TEST(Coroutines, FailsARequestWhoseSocketEpollRefusesWithLimitAndGoesOn) {
    testing_support::expect_a_refused_socket_fails_only_its_request(&fetch_all);
}

// What a request of this stage does: its connect's writer goes and its recv's reader comes in the
// same turn. Told at once, epoll would hear a DEL and an ADD; batched, it hears one MOD.
TEST_F(EpollTest, AWriterSwappedForAReaderInOneTurnReachesEpollAsOneMod) {
    EventLoop loop;
    int ours = -1;
    int theirs = -1;
    std::tie(ours, theirs) = socket_pair();
    const EpollCtlCalls before = epoll_ctl_calls();
    int reads = 0;
    loop.add_writer(ours, [&] {
        loop.remove_writer(ours);
        loop.add_reader(ours, [&] {
            char byte;
            if (::read(ours, &byte, 1) == 1) ++reads;
            loop.remove_reader(ours);
        });
    });
    EXPECT_EQ(since(before).add, 1);  // a new descriptor is added at once
    run_one_turn(loop);               // the writer runs, and swaps itself for a reader
    ASSERT_EQ(::write(theirs, "x", 1), 1);
    testing_support::run_within(loop, sleep(loop, 50ms));
    EXPECT_EQ(reads, 1);
    const EpollCtlCalls calls = since(before);
    EXPECT_EQ(calls.add, 1);
    EXPECT_EQ(calls.mod, 1);
    EXPECT_EQ(calls.del, 1);  // the reader's removal, on the turn after it: the socket stays open
    EXPECT_FALSE(epoll_watches(ours));
    expect_loop_is_clean(loop);
    ::close(ours);
    ::close(theirs);
}

TEST_F(EpollTest, RemoveAndCloseLeavesEpollWithoutADel) {
    EventLoop loop;
    int ours = -1;
    int theirs = -1;
    std::tie(ours, theirs) = socket_pair();
    const EpollCtlCalls before = epoll_ctl_calls();
    loop.add_reader(ours, [] {});
    ASSERT_TRUE(epoll_watches(ours));
    loop.remove_and_close(ours);
    EXPECT_EQ(loop.watched_descriptors(), 0u);
    run_one_turn(loop);
    EXPECT_EQ(since(before).del, 0);
    EXPECT_FALSE(epoll_watches(ours));  // close() took it out
    expect_loop_is_clean(loop);
    ::close(theirs);
}

// A program that closes a watched descriptor itself, after remove_reader, while the DEL still
// waits for the next turn, and whose next socket gets the same number and the same interest: the
// loop must still register the new socket (its MOD fails with ENOENT, and it ADDs instead).
TEST_F(EpollTest, ANumberClosedBehindTheLoopsBackAndReusedIsWatchedAgain) {
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
    loop.remove_and_close(fresh);
    ::close(old_peer);
    ::close(fresh_peer);
}

// A whole request: one ADD (the connect's writer) and one MOD (writer swapped for the reader), and
// no DEL, since its socket is closed through the loop. Told at once, epoll heard four calls. And
// one recv(): exchange waits with wait_readable until the answer is there (a try first would make
// two, the first finding nothing).
TEST_F(EpollTest, ARequestCostsOneAddOneModAndOneRecv) {
    testing_support::expect_calls_per_request(&fetch_all, 1);
}

}  // namespace
}  // namespace sixways::coroutines
