// The pieces of common/fetch.hpp and common/descriptor.hpp that every stage uses to end a request.
#include "common/fetch.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <utility>

#include "common/descriptor.hpp"

namespace sixways {
namespace {

using namespace std::chrono_literals;

TEST(ResultFail, SetsTheErrorAndTheEndAndKeepsHowFarTheRequestGot) {
    Result result;
    const Clock::time_point start = Clock::now();
    result.timing.start = start;
    result.timing.connected = start + 1ms;
    result.fail(ErrorKind::send, "send: Broken pipe");
    EXPECT_FALSE(result.ok());
    EXPECT_EQ(result.error, ErrorKind::send);
    EXPECT_EQ(result.error_message, "send: Broken pipe");
    EXPECT_EQ(result.timing.start, start);
    EXPECT_EQ(result.timing.connected, start + 1ms);
    EXPECT_EQ(result.timing.sent, Clock::time_point{});
    EXPECT_GE(result.timing.done, start);
}

TEST(PhaseName, FollowsTheTimesARequestHasReached) {
    Timing timing;
    timing.start = Clock::now();
    EXPECT_STREQ(phase_name(timing), "connecting");
    timing.connected = timing.start + 1ms;
    EXPECT_STREQ(phase_name(timing), "sending");
    timing.sent = timing.start + 2ms;
    EXPECT_STREQ(phase_name(timing), "waiting");
    timing.first_byte = timing.start + 3ms;
    EXPECT_STREQ(phase_name(timing), "receiving");
    EXPECT_EQ(timeout_message(10s, phase_name(timing)), "timeout after 10 s while receiving");
}

bool is_open(int fd) { return fcntl(fd, F_GETFD) != -1; }

TEST(Descriptor, ClosesWhatItOwnsOnceWhenDestroyedReplacedOrClosed) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    {
        Descriptor read_end(fds[0]);
        Descriptor write_end(fds[1]);
        EXPECT_TRUE(read_end);
        EXPECT_EQ(read_end.fd(), fds[0]);
        Descriptor moved(std::move(write_end));  // hands it over without closing it
        EXPECT_FALSE(write_end);
        EXPECT_TRUE(is_open(fds[1]));
        moved = Descriptor();  // replaced: closes what it held
        EXPECT_FALSE(is_open(fds[1]));
        read_end.close();
        EXPECT_FALSE(read_end);
        EXPECT_FALSE(is_open(fds[0]));
        read_end.close();  // twice: nothing to close
    }
    EXPECT_FALSE(Descriptor(-1));  // what socket() returns when it fails owns nothing
}

TEST(Descriptor, ClosesWhenItGoesOutOfScope) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const Descriptor write_end(fds[1]);
    { const Descriptor read_end(fds[0]); }
    EXPECT_FALSE(is_open(fds[0]));
    EXPECT_TRUE(is_open(fds[1]));
}

}  // namespace
}  // namespace sixways
