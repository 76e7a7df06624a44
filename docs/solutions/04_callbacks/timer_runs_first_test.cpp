// Exercise 3 of chapter 04: a timer that runs first and forgets its request's reader. The response
// arrives after the deadline, in a later turn, and the reader, still watched, reports it too.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "04_callbacks/event_loop.hpp"
#include "docs/solutions/04_callbacks/readable_pair.hpp"

namespace {

using namespace std::chrono_literals;
using sixways::callbacks::EventLoop;
using sixways::solutions::ReadablePair;

// The chapter's test, changed as the exercise asks: the byte is taken out before the loop runs,
// so the first turn finds the socket not readable and runs only the timer; a second timer puts the
// byte back 10 ms later, as a response that comes after its deadline.
std::vector<std::string> run_with_a_late_response(bool timer_removes_the_reader) {
    EventLoop loop;
    ReadablePair pair;
    const int fd = pair.reading_end();
    char byte = 0;
    EXPECT_EQ(::read(fd, &byte, 1), 1);
    std::vector<std::string> outcomes;
    loop.add_reader(fd, [&] {
        outcomes.push_back("response");
        loop.remove_reader(fd);
    });
    loop.call_later(0ms, [&] {
        outcomes.push_back("timeout");
        if (timer_removes_the_reader) loop.remove_reader(fd);  // what on_timeout's finish() does
    });
    loop.call_later(10ms, [&] { EXPECT_EQ(::write(pair.ends[1], "x", 1), 1); });
    loop.run();
    return outcomes;
}

TEST(Solution04TimerRunsFirst, AForgottenReaderReportsTheLateResponseToo) {
    EXPECT_EQ(run_with_a_late_response(false), (std::vector<std::string>{"timeout", "response"}));
}

TEST(Solution04TimerRunsFirst, ATimerThatRemovesTheReaderLeavesOneOutcome) {
    EXPECT_EQ(run_with_a_late_response(true), (std::vector<std::string>{"timeout"}));
}

}  // namespace
