// Exercise 3 of chapter 04: why finish() cancels the timer. A "request" whose response and deadline
// land in the same turn of the loop, once without and once with the cancel.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "04_callbacks/event_loop.hpp"

namespace {

using namespace std::chrono_literals;
using sixways::callbacks::EventLoop;
using sixways::callbacks::TimerHandle;

// A connected pair of UNIX stream sockets with a byte waiting at the reading end: that end is
// readable from the first turn on.
struct ReadablePair {
    int ends[2] = {-1, -1};
    ReadablePair() {
        EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, ends), 0);
        EXPECT_EQ(::write(ends[1], "x", 1), 1);
    }
    ~ReadablePair() {
        ::close(ends[0]);
        ::close(ends[1]);
    }
    int reading_end() const { return ends[0]; }
};

TEST(Solution04ExactlyOneOutcome, WithoutCancellingTheTimerARequestSucceedsAndThenTimesOut) {
    EventLoop loop;
    ReadablePair pair;
    const int fd = pair.reading_end();
    std::vector<std::string> outcomes;
    loop.add_reader(fd, [&] {
        outcomes.push_back("response");
        loop.remove_reader(fd);  // ...but the timer is left as it is
    });
    loop.call_later(0ms, [&] { outcomes.push_back("timeout"); });  // due in the first turn
    loop.run();
    // Both ran, in this order: a turn collects readiness before due timers.
    EXPECT_EQ(outcomes, (std::vector<std::string>{"response", "timeout"}));
}

TEST(Solution04ExactlyOneOutcome, CancellingTheTimerInTheReaderLeavesOnlyTheResponse) {
    EventLoop loop;
    ReadablePair pair;
    const int fd = pair.reading_end();
    std::vector<std::string> outcomes;
    TimerHandle timeout;
    loop.add_reader(fd, [&] {
        outcomes.push_back("response");
        timeout.cancel();  // what Fetcher::finish() does first
        loop.remove_reader(fd);
    });
    timeout = loop.call_later(0ms, [&] { outcomes.push_back("timeout"); });
    loop.run();
    // The timer was already in this turn's queue when it was cancelled: the loop skipped it.
    EXPECT_EQ(outcomes, (std::vector<std::string>{"response"}));
}

}  // namespace
