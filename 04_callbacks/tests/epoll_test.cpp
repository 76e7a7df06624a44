// What the reactor tells epoll, counted by tests/support/epoll_refusal.cpp, which stands in for the
// kernel's epoll_ctl in this program: each change at once, a socket closed through the loop costs
// no EPOLL_CTL_DEL, a number closed and reused after its reader was removed is watched again, and a
// socket that epoll refuses fails only its own request, with `limit`, while the others go on.
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>

#include "04_callbacks/event_loop.hpp"
#include "04_callbacks/fetch.hpp"
#include "tests/support/epoll_refusal.hpp"

namespace sixways::callbacks {
namespace {

using namespace std::chrono_literals;
using testing_support::epoll_ctl_calls;
using testing_support::EpollCtlCalls;

// The calls made since `before`.
EpollCtlCalls since(const EpollCtlCalls& before) {
    const EpollCtlCalls now = epoll_ctl_calls();
    return {now.add - before.add, now.mod - before.mod, now.del - before.del};
}

// A connected pair of non-blocking UNIX stream sockets.
void socket_pair(int& ours, int& theirs) {
    int ends[2] = {-1, -1};
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, ends), 0);
    ours = ends[0];
    theirs = ends[1];
}

TEST(Callbacks, FailsARequestWhoseSocketEpollRefusesWithLimitAndGoesOn) {
    using sixways::testing_support::expect_a_refused_socket_fails_only_its_request;
    expect_a_refused_socket_fails_only_its_request(&sixways::callbacks::fetch_all);
}

// What a Fetcher does once its request is sent: its reader comes and its writer goes in the same
// callback. Each change reaches epoll at once, as it is made: two MODs. (A loop that batches its
// changes per turn, as docs/deeper/04_batching_epoll_changes.md shows, makes them one.)
TEST(CallbacksEpoll, EachChangeReachesEpollAtOnce) {
    EventLoop loop;
    int ours = -1;
    int theirs = -1;
    socket_pair(ours, theirs);
    const EpollCtlCalls before = epoll_ctl_calls();
    int reads = 0;
    loop.add_writer(ours, [&] {
        const EpollCtlCalls at_first_turn = since(before);
        loop.add_reader(ours, [&] {
            char byte;
            if (::read(ours, &byte, 1) == 1) ++reads;
            loop.remove_reader(ours);
            EXPECT_EQ(since(before).del, 1);  // at once, inside the callback
        });
        EXPECT_EQ(since(before).mod, at_first_turn.mod + 1);
        loop.remove_writer(ours);
        EXPECT_EQ(since(before).mod, at_first_turn.mod + 2);
        ASSERT_EQ(::write(theirs, "x", 1), 1);
    });
    EXPECT_EQ(since(before).add, 1);
    loop.run();
    EXPECT_EQ(reads, 1);
    const EpollCtlCalls calls = since(before);
    EXPECT_EQ(calls.add, 1);
    EXPECT_EQ(calls.mod, 2);
    EXPECT_EQ(calls.del, 1);  // the reader's removal: the socket stays open
    ::close(ours);
    ::close(theirs);
}

TEST(CallbacksEpoll, RemoveAndCloseLeavesEpollWithoutADel) {
    EventLoop loop;
    int ours = -1;
    int theirs = -1;
    socket_pair(ours, theirs);
    const EpollCtlCalls before = epoll_ctl_calls();
    loop.add_reader(ours, [] {});
    loop.remove_and_close(ours);
    loop.call_later(10ms, [] {});  // a turn, in which the loop would tell epoll of any change
    loop.run();
    const EpollCtlCalls calls = since(before);
    EXPECT_EQ(calls.add, 1);
    EXPECT_EQ(calls.del, 0);
    ::close(theirs);
}

// A program that removes a reader and then closes the descriptor itself, and whose next socket
// gets the same number and the same interest: the new socket must be registered afresh (an ADD),
// and its event must reach its own reader.
TEST(CallbacksEpoll, ANumberClosedBehindTheLoopsBackAndReusedIsWatchedAgain) {
    EventLoop loop;
    int old_socket = -1;
    int old_peer = -1;
    socket_pair(old_socket, old_peer);
    loop.add_reader(old_socket, [] {});
    loop.remove_reader(old_socket);
    ::close(old_socket);
    int fresh = -1;
    int fresh_peer = -1;
    socket_pair(fresh, fresh_peer);
    if (fresh != old_socket) {  // the lowest free number is usually the one just closed
        ASSERT_EQ(::dup2(fresh, old_socket), old_socket);
        ::close(fresh);
        fresh = old_socket;
    }
    int reads = 0;
    TimerHandle watchdog = loop.call_later(2s, [&] { loop.remove_reader(fresh); });  // no hang
    loop.add_reader(fresh, [&] {
        char byte;
        if (::read(fresh, &byte, 1) == 1) ++reads;
        loop.remove_reader(fresh);
        watchdog.cancel();
    });
    ASSERT_EQ(::write(fresh_peer, "x", 1), 1);
    loop.run();
    EXPECT_EQ(reads, 1);
    loop.remove_and_close(fresh);
    ::close(old_peer);
    ::close(fresh_peer);
}

// A whole request: one ADD (the connect's writer), two MODs (a reader added, the writer removed),
// and no DEL, since its socket is closed through the loop. The reader is called once the answer is
// there, so one recv() gets it.
TEST(CallbacksEpoll, ARequestCostsOneAddTwoModsAndOneRecv) {
    testing_support::expect_calls_per_request(&fetch_all, 1, 2);
}

}  // namespace
}  // namespace sixways::callbacks
