// Chapter 04's stale timer, answered: the response and the deadline land in the same turn of the
// loop, and the reader cancels the timer, as Fetcher::finish() does.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "04_callbacks/event_loop.hpp"
#include "docs/solutions/04_callbacks/readable_pair.hpp"

namespace {

using namespace std::chrono_literals;
using sixways::callbacks::EventLoop;
using sixways::callbacks::TimerHandle;
using sixways::solutions::ReadablePair;

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
