// Chapter 04's test of a stale timer: a "request" whose response and deadline land in the same turn
// of the loop, and whose reader does not cancel the timer. Exercise 3 starts from a copy of it.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "04_callbacks/event_loop.hpp"
#include "docs/solutions/04_callbacks/readable_pair.hpp"

namespace {

using namespace std::chrono_literals;
using sixways::callbacks::EventLoop;
using sixways::solutions::ReadablePair;

TEST(Solution04StaleTimer, AResponseAndItsDeadlineInOneTurn) {
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

}  // namespace
