// A connected pair of UNIX stream sockets with a byte waiting: what the tests of chapter 04's
// stale timer (timer_after_response_test.cpp, exactly_one_outcome_test.cpp,
// timer_runs_first_test.cpp) use as a request whose response has arrived.
#pragma once

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

namespace sixways::solutions {

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

}  // namespace sixways::solutions
