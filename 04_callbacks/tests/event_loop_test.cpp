// The reactor on its own: timers, the ready queue, and the guarantees the fetcher relies on (no
// callback for a registration that was removed, not even from the same epoll_wait batch).
#include "04_callbacks/event_loop.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

namespace sixways::callbacks {
namespace {

using namespace std::chrono_literals;

// A connected pair of UNIX stream sockets, closed by the destructor (each end at most once).
struct SocketPair {
    int ends[2] = {-1, -1};
    SocketPair() { EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, ends), 0); }
    ~SocketPair() {
        for (int fd : ends) {
            if (fd >= 0) close(fd);
        }
    }
    int reading_end() const { return ends[0]; }
    // Makes the reading end readable.
    void write_byte() { ASSERT_EQ(write(ends[1], "x", 1), 1); }
    void close_reading_end() {
        close(ends[0]);
        ends[0] = -1;
    }
};

TEST(CallbacksEventLoop, RunReturnsAtOnceWhenNothingIsScheduled) {
    EventLoop loop;
    loop.run();
    SUCCEED();
}

TEST(CallbacksEventLoop, TimersFireInDeadlineOrder) {
    EventLoop loop;
    std::vector<int> order;
    const Clock::time_point start = loop.time();
    loop.call_at(start + 30ms, [&] { order.push_back(30); });
    loop.call_at(start + 10ms, [&] { order.push_back(10); });
    loop.call_at(start + 20ms, [&] { order.push_back(20); });
    loop.call_at(start, [&] { order.push_back(0); });
    loop.run();
    EXPECT_EQ(order, (std::vector<int>{0, 10, 20, 30}));
}

TEST(CallbacksEventLoop, TimersWithEqualDeadlinesFireInTheOrderTheyWereScheduled) {
    EventLoop loop;
    std::vector<int> order;
    const Clock::time_point when = loop.time() + 5ms;
    for (int i = 0; i < 10; ++i) {
        loop.call_at(when, [&order, i] { order.push_back(i); });
    }
    loop.run();
    EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
}

TEST(CallbacksEventLoop, ATimerNeverFiresBeforeItsDeadline) {
    EventLoop loop;
    Clock::time_point deadline;
    Clock::time_point fired;
    deadline = loop.time() + 15ms;
    loop.call_at(deadline, [&] { fired = loop.time(); });
    loop.run();
    EXPECT_GE(fired, deadline);
}

TEST(CallbacksEventLoop, ACancelledTimerNeverFires) {
    EventLoop loop;
    bool fired = false;
    TimerHandle handle = loop.call_later(50ms, [&] { fired = true; });
    handle.cancel();
    EXPECT_TRUE(handle.cancelled());
    loop.run();
    EXPECT_FALSE(fired);
}

TEST(CallbacksEventLoop, ATimerCancelledByAnEarlierCallbackOfTheSameTurnNeverFires) {
    EventLoop loop;
    bool fired = false;
    const Clock::time_point when = loop.time();
    TimerHandle second;
    // Both are due in the first turn and both are queued before either runs; the first cancels
    // the second, which is already in the ready queue.
    loop.call_at(when, [&] { second.cancel(); });
    second = loop.call_at(when, [&] { fired = true; });
    loop.run();
    EXPECT_FALSE(fired);
}

TEST(CallbacksEventLoop, CancelledTimersDoNotKeepRunAlive) {
    EventLoop loop;
    std::vector<TimerHandle> handles;
    for (int i = 0; i < 1000; ++i) {
        handles.push_back(loop.call_later(1h, [] { ADD_FAILURE() << "a cancelled timer fired"; }));
    }
    bool fired = false;
    loop.call_later(1ms, [&] { fired = true; });
    for (TimerHandle& handle : handles) handle.cancel();
    loop.run();  // would sleep for an hour if cancelled timers counted
    EXPECT_TRUE(fired);
}

TEST(CallbacksEventLoop, CancellingATimerTwiceOrAfterItFiredDoesNothing) {
    EventLoop loop;
    int fired = 0;
    TimerHandle handle = loop.call_later(0ms, [&] { ++fired; });
    loop.run();
    handle.cancel();
    handle.cancel();
    TimerHandle nothing;
    nothing.cancel();
    loop.run();
    EXPECT_EQ(fired, 1);
}

TEST(CallbacksEventLoop, CallSoonCallbacksScheduledDuringATurnRunOnTheNextTurn) {
    EventLoop loop;
    std::vector<std::string> order;
    loop.call_soon([&] {
        order.push_back("first");
        loop.call_soon([&] { order.push_back("scheduled by first"); });
    });
    loop.call_soon([&] { order.push_back("second"); });
    loop.run();
    EXPECT_EQ(order, (std::vector<std::string>{"first", "second", "scheduled by first"}));
}

TEST(CallbacksEventLoop, ACallbackThatKeepsReschedulingItselfDoesNotStarveTimers) {
    EventLoop loop;
    bool timer_fired = false;
    int turns = 0;
    std::function<void()> again = [&] {
        ++turns;
        if (!timer_fired) loop.call_soon(again);
    };
    loop.call_soon(again);
    loop.call_later(5ms, [&] { timer_fired = true; });
    loop.run();
    EXPECT_TRUE(timer_fired);
    EXPECT_GT(turns, 1);
}

TEST(CallbacksEventLoop, AReaderIsCalledWhenItsDescriptorBecomesReadable) {
    EventLoop loop;
    SocketPair pair;
    int calls = 0;
    loop.add_reader(pair.reading_end(), [&] {
        ++calls;
        char byte;
        ASSERT_EQ(read(pair.reading_end(), &byte, 1), 1);
        loop.remove_reader(pair.reading_end());
    });
    loop.call_later(5ms, [&] { pair.write_byte(); });
    loop.run();
    EXPECT_EQ(calls, 1);
}

TEST(CallbacksEventLoop, AReaderAndAWriterOnOneDescriptorAreBothServed) {
    EventLoop loop;
    SocketPair pair;
    bool wrote = false;
    bool read_back = false;
    const int fd = pair.reading_end();
    loop.add_reader(fd, [&] {
        char byte;
        ASSERT_EQ(read(fd, &byte, 1), 1);
        read_back = true;
        loop.remove_reader(fd);
    });
    loop.add_writer(fd, [&] {
        wrote = true;
        loop.remove_writer(fd);  // the reader stays registered (EPOLL_CTL_MOD)
        pair.write_byte();
    });
    loop.run();
    EXPECT_TRUE(wrote);
    EXPECT_TRUE(read_back);
}

TEST(CallbacksEventLoop, RemovingWhatWasNeverAddedReturnsFalse) {
    EventLoop loop;
    SocketPair pair;
    EXPECT_FALSE(loop.remove_reader(pair.reading_end()));
    EXPECT_FALSE(loop.remove_writer(12345));
    loop.add_writer(pair.reading_end(), [] {});
    EXPECT_FALSE(loop.remove_reader(pair.reading_end()));
    EXPECT_TRUE(loop.remove_writer(pair.reading_end()));
    EXPECT_FALSE(loop.remove_writer(pair.reading_end()));
}

TEST(CallbacksEventLoop, AddingAReaderTwiceReplacesTheFirst) {
    EventLoop loop;
    SocketPair pair;
    pair.write_byte();
    int first = 0;
    int second = 0;
    loop.add_reader(pair.reading_end(), [&] { ++first; });
    loop.add_reader(pair.reading_end(), [&] {
        ++second;
        loop.remove_reader(pair.reading_end());
    });
    loop.run();
    EXPECT_EQ(first, 0);
    EXPECT_EQ(second, 1);
}

TEST(CallbacksEventLoop, ACallbackThatRemovesAnotherReaderPreventsThatReadersPendingEvent) {
    EventLoop loop;
    SocketPair a, b;
    a.write_byte();
    b.write_byte();
    // Both are readable, so one epoll_wait reports both. Whichever runs first removes the other,
    // whose event is then already in this turn's ready queue.
    int calls = 0;
    loop.add_reader(a.reading_end(), [&] {
        ++calls;
        loop.remove_reader(a.reading_end());
        loop.remove_reader(b.reading_end());
    });
    loop.add_reader(b.reading_end(), [&] {
        ++calls;
        loop.remove_reader(b.reading_end());
        loop.remove_reader(a.reading_end());
    });
    loop.run();
    EXPECT_EQ(calls, 1);
}

TEST(CallbacksEventLoop, AnEventForAClosedDescriptorNeverReachesANewSocketThatReusesItsNumber) {
    EventLoop loop;
    SocketPair a, b;
    a.write_byte();
    b.write_byte();
    std::unique_ptr<SocketPair> replacement;
    int first_calls = 0;
    int replacement_calls = 0;
    int reused_number = -1;
    int closed_number = -1;
    // Whichever of a and b runs first closes the other and opens a new socket pair: the kernel
    // hands out the lowest free number, the one just closed. The closed socket's event is still in
    // this turn's ready queue. (It removes the reader, then closes the socket itself rather than
    // with remove_and_close: the harder case for the loop, which must still register the new
    // socket on the recycled number.)
    auto first = [&](SocketPair& self, SocketPair& other) {
        ++first_calls;
        loop.remove_reader(self.reading_end());
        closed_number = other.reading_end();
        loop.remove_reader(other.reading_end());
        other.close_reading_end();
        replacement = std::make_unique<SocketPair>();
        reused_number = replacement->reading_end();
        loop.add_reader(reused_number, [&] { ++replacement_calls; });
        // The replacement is never written to; stop watching it on the next turn.
        loop.call_soon([&] { loop.remove_reader(reused_number); });
    };
    loop.add_reader(a.reading_end(), [&] { first(a, b); });
    loop.add_reader(b.reading_end(), [&] { first(b, a); });
    loop.run();
    EXPECT_EQ(first_calls, 1);
    ASSERT_EQ(reused_number, closed_number) << "the kernel did not reuse the number; test is void";
    EXPECT_EQ(replacement_calls, 0);
}

// The fetcher's race in miniature: a "request" whose data arrives in the same turn as its
// timeout. Whichever callback runs first must cancel the other, giving exactly one outcome.
TEST(CallbacksEventLoop, ATimeoutAndAReadinessEventInOneTurnGiveExactlyOneOutcome) {
    EventLoop loop;
    SocketPair pair;
    pair.write_byte();
    std::vector<std::string> outcomes;
    TimerHandle timeout;
    const int fd = pair.reading_end();
    loop.add_reader(fd, [&] {
        outcomes.push_back("response");
        timeout.cancel();
        loop.remove_reader(fd);
    });
    // Zero delay: due in the first turn, which also collects the readable event.
    timeout = loop.call_later(0ms, [&] {
        outcomes.push_back("timeout");
        loop.remove_reader(fd);
    });
    loop.run();
    EXPECT_EQ(outcomes.size(), 1u);
}

// The same race the other way round: the timeout's callback is queued ahead of the readiness event
// (a call_soon from the previous turn runs before this turn's I/O), so the reader must be skipped.
TEST(CallbacksEventLoop, ATimeoutThatRunsFirstCancelsTheReadinessEventOfTheSameTurn) {
    EventLoop loop;
    SocketPair pair;
    pair.write_byte();
    std::vector<std::string> outcomes;
    const int fd = pair.reading_end();
    loop.add_reader(fd, [&] {
        outcomes.push_back("response");
        loop.remove_reader(fd);
    });
    loop.call_soon([&] {
        outcomes.push_back("timeout");
        loop.remove_reader(fd);
    });
    loop.run();
    EXPECT_EQ(outcomes, (std::vector<std::string>{"timeout"}));
}

TEST(CallbacksEventLoop, RunReturnsOnceTheLastReaderIsRemoved) {
    EventLoop loop;
    SocketPair pair;
    loop.add_reader(pair.reading_end(), [] { ADD_FAILURE() << "nothing was written"; });
    loop.call_later(1ms, [&] { loop.remove_reader(pair.reading_end()); });
    loop.run();
    SUCCEED();
}

TEST(CallbacksEventLoop, RunFromInsideACallbackThrowsAndTheLoopGoesOn) {
    EventLoop loop;
    bool threw = false;
    bool later_ran = false;
    loop.call_soon([&] {
        try {
            loop.run();
        } catch (const std::logic_error&) {
            threw = true;
        }
        loop.call_soon([&] { later_ran = true; });
    });
    loop.run();
    EXPECT_TRUE(threw);
    EXPECT_TRUE(later_ran);
}

TEST(CallbacksEventLoop, AddingAReaderForAnInvalidDescriptorThrowsAndLeavesNothingBehind) {
    EventLoop loop;
    SocketPair pair;
    const int fd = pair.reading_end();
    pair.close_reading_end();
    EXPECT_THROW(loop.add_reader(fd, [] {}), std::system_error);
    EXPECT_FALSE(loop.remove_reader(fd));
    loop.run();  // returns: the failed registration does not count
}

}  // namespace
}  // namespace sixways::callbacks
