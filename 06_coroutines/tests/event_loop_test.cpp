// The event loop on its own: callbacks, timers, descriptors, registrations, and the stale-event
// guard.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <stdexcept>
#include <new>
#include <string>
#include <tuple>
#include <vector>

#include "06_coroutines/event_loop.hpp"
#include "06_coroutines/tests/helpers.hpp"

namespace sixways::coroutines {
namespace {

using namespace std::chrono_literals;
using testing_support::epoll_watches;
using testing_support::run_one_turn;
using testing_support::socket_pair;

class EventLoopTest : public testing_support::LeakCheckedTest {};

TEST_F(EventLoopTest, CallSoonRunsTheCallbackOnALaterTurnNeverInsideTheCall) {
    EventLoop loop;
    std::vector<std::string> order;
    loop.call_soon([&] {
        order.push_back("first");
        loop.call_soon([&] {
            order.push_back("third");
            loop.stop();
        });
        order.push_back("first, still");  // the callback scheduled above has not run yet
    });
    loop.call_soon([&] { order.push_back("second"); });
    EXPECT_TRUE(order.empty());
    loop.run_forever();
    EXPECT_EQ(order, (std::vector<std::string>{"first", "first, still", "second", "third"}));
}

TEST_F(EventLoopTest, TimersRunInDeadlineOrderAndEqualDeadlinesInSchedulingOrder) {
    EventLoop loop;
    std::vector<int> order;
    const Clock::time_point now = loop.time();
    loop.call_at(now + 30ms, [&] {
        order.push_back(3);
        loop.stop();
    });
    loop.call_at(now + 10ms, [&] { order.push_back(1); });
    loop.call_at(now + 20ms, [&] { order.push_back(2); });
    loop.call_at(now + 10ms, [&] { order.push_back(11); });  // same deadline as 1, scheduled later
    loop.run_forever();
    EXPECT_EQ(order, (std::vector<int>{1, 11, 2, 3}));
}

TEST_F(EventLoopTest, ATimerNeverRunsBeforeItsDeadline) {
    EventLoop loop;
    // 1.5 ms: epoll_wait counts whole milliseconds, so the loop must round the wait up, not down.
    for (const Duration delay : {Duration(1500us), Duration(1ms), Duration(0)}) {
        const Clock::time_point when = loop.time() + delay;
        bool on_time = false;
        loop.call_at(when, [&] {
            on_time = loop.time() >= when;
            loop.stop();
        });
        loop.run_forever();
        EXPECT_TRUE(on_time) << "delay " << delay.count() << " ns";
    }
}

TEST_F(EventLoopTest, ACancelledTimerNeverRunsEvenWhenItIsDueInTheSameTurn) {
    EventLoop loop;
    const Clock::time_point when = loop.time() + 5ms;
    bool second_ran = false;
    TimerHandle second;
    loop.call_at(when, [&] { second.cancel(); });  // both are due in the same turn; this one first
    second = loop.call_at(when, [&] { second_ran = true; });
    loop.call_at(when + 5ms, [&] { loop.stop(); });
    loop.run_forever();
    EXPECT_FALSE(second_ran);
    EXPECT_TRUE(second.cancelled());
    second.cancel();  // twice: nothing happens
}

// A callback that owns the object that holds its own timer: cancelling through that object
// destroys the callback, hence the object, hence the very handle cancel() was called on.
struct SelfTimed {
    explicit SelfTimed(bool* destroyed) : destroyed(destroyed) {}
    ~SelfTimed() { *destroyed = true; }
    TimerHandle timer;
    bool* destroyed;
};

TEST_F(EventLoopTest, CancellingATimerWhoseCallbackOwnsTheHandleIsSafe) {
    EventLoop loop;
    bool destroyed = false;
    auto owner = std::make_shared<SelfTimed>(&destroyed);
    owner->timer = loop.call_later(1h, [owner] {});
    SelfTimed* self = owner.get();
    owner.reset();  // the callback holds the only reference now
    self->timer.cancel();  // frees *self, the handle included (AddressSanitizer checks the rest)
    EXPECT_TRUE(destroyed);  // what the callback captured was released at once
    EXPECT_EQ(loop.pending_timers(), 0u);
}

TEST_F(EventLoopTest, ATimerOfDurationMaxNeverComesDue) {
    EventLoop loop;
    bool ran = false;
    TimerHandle never = loop.call_later(Duration::max(), [&] { ran = true; });
    run_one_turn(loop);
    run_one_turn(loop);
    EXPECT_FALSE(ran);  // not an overflow into the past, which would be due at once
    EXPECT_EQ(loop.pending_timers(), 1u);
    never.cancel();
}

// A timer that re-arms itself for a deadline already past is due again at once. Due timers join
// the ready queue, and what runs in a turn schedules for the next one: so it runs once per turn,
// and callbacks and readers get their turns meanwhile. (A limit on the runs keeps a loop that
// would run it again and again inside one turn from running for ever.)
TEST_F(EventLoopTest, ATimerThatReArmsItselfForAPastDeadlineRunsOncePerTurnAndTheRestStillRuns) {
    EventLoop loop;
    int ours = -1;
    int theirs = -1;
    std::tie(ours, theirs) = socket_pair();
    ASSERT_EQ(::write(theirs, "x", 1), 1);  // never read: readable on every turn
    int timer_runs = 0;
    std::function<void()> rearm = [&] {
        if (++timer_runs < 1000) loop.call_at(loop.time() - 1s, rearm);
    };
    loop.call_at(loop.time() - 1s, rearm);
    int reader_runs = 0;
    loop.add_reader(ours, [&] { ++reader_runs; });
    int soon_runs = 0;
    std::function<void()> tick = [&] {
        ++soon_runs;
        loop.call_soon(tick);
    };
    loop.call_soon(tick);
    for (int turn = 1; turn <= 3; ++turn) {
        run_one_turn(loop);
        EXPECT_EQ(timer_runs, turn);
        EXPECT_EQ(reader_runs, turn);
        EXPECT_EQ(soon_runs, turn);
    }
    loop.remove_reader(ours);
    ::close(ours);
    ::close(theirs);
}

TEST_F(EventLoopTest, ARunForeverWithNothingToWaitForThrowsInsteadOfHanging) {
    EventLoop loop;
    EXPECT_THROW(loop.run_forever(), std::logic_error);
    TimerHandle timer = loop.call_later(1h, [] {});
    timer.cancel();  // a cancelled timer is nothing to wait for either
    EXPECT_THROW(loop.run_forever(), std::logic_error);
}

TEST_F(EventLoopTest, ACallbackThatThrowsIsReportedAndTheLoopGoesOn) {
    EventLoop loop;
    bool next_ran = false;
    loop.call_soon([] { throw std::runtime_error("boom"); });
    loop.call_soon([&] {
        next_ran = true;
        loop.stop();
    });
    testing::internal::CaptureStderr();
    loop.run_forever();
    const std::string errors = testing::internal::GetCapturedStderr();
    EXPECT_TRUE(next_ran);
    EXPECT_NE(errors.find("Exception in callback: boom"), std::string::npos) << errors;
}

// Out of memory is not a callback's own failure: it leaves the loop (and fetch_all, whose command
// line reports every request without a result), instead of being reported once per callback.
TEST_F(EventLoopTest, ACallbackRunningOutOfMemoryEndsTheRun) {
    EventLoop loop;
    bool next_ran = false;
    loop.call_soon([] { throw std::bad_alloc(); });
    loop.call_soon([&] { next_ran = true; });
    EXPECT_THROW(loop.run_forever(), std::bad_alloc);
    EXPECT_FALSE(next_ran);
}

TEST_F(EventLoopTest, AReaderIsCalledEveryTurnWhileDataIsUnreadAndNeverAfterItsRemoval) {
    EventLoop loop;
    int ours = -1;
    int theirs = -1;
    std::tie(ours, theirs) = socket_pair();
    ASSERT_EQ(::write(theirs, "x", 1), 1);
    int calls = 0;
    loop.add_reader(ours, [&] {
        if (++calls == 3) {
            EXPECT_TRUE(loop.remove_reader(ours));  // a callback may remove itself
            loop.call_later(5ms, [&] { loop.stop(); });
        }
    });
    loop.run_forever();
    EXPECT_EQ(calls, 3);  // level-triggered: called on each turn while the byte was unread
    EXPECT_FALSE(loop.remove_reader(ours));
    ::close(ours);
    ::close(theirs);
}

// A Handle names one reader: removing it after a newer reader took its place (as a newer socket
// with the same number would) removes nothing.
TEST_F(EventLoopTest, RemovingAHandleRemovesThatReaderOnlyNotANewerOne) {
    EventLoop loop;
    int ours = -1;
    int theirs = -1;
    std::tie(ours, theirs) = socket_pair();
    const std::shared_ptr<Handle> first = loop.add_reader(ours, [] {});
    const std::shared_ptr<Handle> second = loop.add_reader(ours, [] {});  // replaces the first
    EXPECT_FALSE(loop.remove(ours, first));
    EXPECT_EQ(loop.watched_descriptors(), 1u);
    EXPECT_TRUE(epoll_watches(ours));
    EXPECT_TRUE(loop.remove(ours, second));
    EXPECT_FALSE(loop.remove(ours, second));  // twice: nothing to remove
    EXPECT_FALSE(epoll_watches(ours));
    ::close(ours);
    ::close(theirs);
}

TEST_F(EventLoopTest, ANegativeDescriptorIsRefusedByEveryWayOfWatchingAndNothingIsWatched) {
    EventLoop loop;
    EXPECT_THROW(loop.add_reader(-1, [] {}), std::invalid_argument);
    EXPECT_THROW(loop.add_writer(-1, [] {}), std::invalid_argument);
    EXPECT_THROW(loop.add_socket_wait(-1, false, [] {}), std::invalid_argument);
    EXPECT_EQ(loop.watched_descriptors(), 0u);
}

TEST_F(EventLoopTest, AWriterAndAReaderOfOneDescriptorAreIndependent) {
    EventLoop loop;
    int ours = -1;
    int theirs = -1;
    std::tie(ours, theirs) = socket_pair();
    bool wrote = false;
    bool read = false;
    loop.add_reader(ours, [&] {
        char byte;
        EXPECT_EQ(::read(ours, &byte, 1), 1);
        read = true;
        loop.remove_reader(ours);
        loop.stop();
    });
    loop.add_writer(ours, [&] {
        EXPECT_EQ(::write(ours, "y", 1), 1);
        wrote = true;
        loop.remove_writer(ours);  // the reader stays
        EXPECT_EQ(::write(theirs, "z", 1), 1);
    });
    loop.run_forever();
    EXPECT_TRUE(wrote);
    EXPECT_TRUE(read);
    ::close(ours);
    ::close(theirs);
}

// Two readable sockets, so one epoll_wait reports both. Whichever callback runs first removes the
// other's reader and closes its socket: the other's event, already in the batch, must be dropped.
TEST_F(EventLoopTest, AnEventForADescriptorRemovedEarlierInTheSameBatchIsDropped) {
    EventLoop loop;
    int a = -1;
    int a_peer = -1;
    std::tie(a, a_peer) = socket_pair();
    int b = -1;
    int b_peer = -1;
    std::tie(b, b_peer) = socket_pair();
    ASSERT_EQ(::write(a_peer, "x", 1), 1);
    ASSERT_EQ(::write(b_peer, "x", 1), 1);
    int calls = 0;
    int fd_a = a;
    int fd_b = b;
    auto close_other = [&](int self, int other) {
        ++calls;
        loop.remove_reader(self);
        loop.remove_reader(other);
        ::close(other);
        loop.call_later(5ms, [&] { loop.stop(); });
    };
    loop.add_reader(fd_a, [&] { close_other(fd_a, fd_b); });
    loop.add_reader(fd_b, [&] { close_other(fd_b, fd_a); });
    loop.run_forever();
    EXPECT_EQ(calls, 1);
    // One of a and b is closed already; close the survivor and the peers.
    if (::fcntl(fd_a, F_GETFD) != -1) ::close(fd_a);
    if (::fcntl(fd_b, F_GETFD) != -1) ::close(fd_b);
    ::close(a_peer);
    ::close(b_peer);
}

// As above, but the first callback also puts a new, silent socket under the number it just
// closed and watches it. The old socket's event, still in the batch, carries the same number: it
// must not reach the new socket's reader, which would then read a socket that has nothing to say.
TEST_F(EventLoopTest, AnEventForADescriptorNumberReusedInTheSameBatchDoesNotReachTheNewSocket) {
    EventLoop loop;
    int a = -1;
    int a_peer = -1;
    std::tie(a, a_peer) = socket_pair();
    int b = -1;
    int b_peer = -1;
    std::tie(b, b_peer) = socket_pair();
    ASSERT_EQ(::write(a_peer, "x", 1), 1);
    ASSERT_EQ(::write(b_peer, "x", 1), 1);
    int fresh = -1;
    int fresh_peer = -1;
    std::tie(fresh, fresh_peer) = socket_pair();  // never written to
    int fd_a = a;
    int fd_b = b;
    int first_calls = 0;
    int fresh_calls = 0;
    auto replace_other = [&](int self, int other) {
        ++first_calls;
        loop.remove_reader(self);
        loop.remove_reader(other);
        ASSERT_EQ(::dup2(fresh, other), other);  // the number `other` now names the silent socket
        loop.add_reader(other, [&] { ++fresh_calls; });
        loop.call_later(5ms, [&] { loop.stop(); });
    };
    loop.add_reader(fd_a, [&] { replace_other(fd_a, fd_b); });
    loop.add_reader(fd_b, [&] { replace_other(fd_b, fd_a); });
    loop.run_forever();
    EXPECT_EQ(first_calls, 1);
    EXPECT_EQ(fresh_calls, 0);
    loop.remove_reader(fd_a);
    loop.remove_reader(fd_b);
    for (int fd : {fd_a, fd_b, a_peer, b_peer, fresh, fresh_peer}) ::close(fd);
}

TEST_F(EventLoopTest, StopEndsRunForeverAfterTheTurnThatIsRunning) {
    EventLoop loop;
    bool later_ran = false;
    loop.call_soon([&] {
        loop.stop();
        loop.call_soon([&] { later_ran = true; });  // the next turn: after run_forever returned
    });
    loop.run_forever();
    EXPECT_FALSE(later_ran);
    loop.call_soon([&] { loop.stop(); });
    loop.run_forever();  // runs again, and picks up where it left off
    EXPECT_TRUE(later_ran);
}

// asyncio: loop.stop() before run_forever() makes run_forever() run one turn and return.
TEST_F(EventLoopTest, StopBeforeRunForeverIsRememberedAndEndsItsFirstTurn) {
    EventLoop loop;
    bool ran = false;
    loop.call_soon([&] { ran = true; });
    loop.stop();
    EXPECT_NO_THROW(loop.run_forever());
    EXPECT_TRUE(ran);
}

// Runs `action` when it is destroyed: a capture that calls back into the loop from its destructor.
struct OnDestroy {
    std::function<void()> action;
    explicit OnDestroy(std::function<void()> action) : action(std::move(action)) {}
    OnDestroy(const OnDestroy&) = delete;
    OnDestroy& operator=(const OnDestroy&) = delete;
    ~OnDestroy() {
        if (action) action();
    }
};

// A connection held by its own reader, as stage 04 writes them: destroying the loop destroys the
// reader, which closes the socket, which removes the reader being destroyed.
TEST_F(EventLoopTest, DestroyingTheLoopDestroysAReaderThatRemovesItselfAsItGoes) {
    auto [fd, peer] = socket_pair();
    bool removed = true;
    {
        EventLoop loop;
        auto owner = std::make_shared<OnDestroy>([&loop, &removed, fd = fd] {
            removed = loop.remove_reader(fd);
            ::close(fd);
        });
        loop.add_reader(fd, [owner] {});
        owner.reset();
    }
    EXPECT_FALSE(removed) << "remove_reader during ~EventLoop has nothing to remove";
    ::close(peer);
}

TEST_F(EventLoopTest, DestroyingTheLoopDestroysCallbacksThatScheduleMoreAsTheyGo) {
    auto [fd, peer] = socket_pair();
    {
        EventLoop loop;
        auto timer_owner = std::make_shared<OnDestroy>([&loop] { loop.call_later(1s, [] {}); });
        loop.call_later(1h, [timer_owner] {});
        auto reader_owner = std::make_shared<OnDestroy>([&loop] { loop.call_soon([] {}); });
        loop.add_reader(fd, [reader_owner] {});
        auto ready_owner = std::make_shared<OnDestroy>([&loop, fd = fd] { loop.add_writer(fd, [] {}); });
        loop.call_soon([ready_owner] {});
        timer_owner.reset();
        reader_owner.reset();
        ready_owner.reset();
    }
    for (int each : {fd, peer}) ::close(each);
}

}  // namespace
}  // namespace sixways::coroutines
