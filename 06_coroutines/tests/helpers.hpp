// What every test of this stage shares, on top of what the tests of every stage share
// (tests/support/stage_support.hpp, whose names this namespace takes in): a `Counted` type to catch
// leaked or doubly destroyed objects (cppcoro's tests do the same), and a fixture that checks both
// Counted objects and open descriptors after every test. Put Counted objects in coroutine frames
// (as locals or parameters) and a frame that is never freed, or freed twice, fails the test that
// made it.
#pragma once

#include <dirent.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstddef>
#include <fstream>
#include <string>
#include <utility>

#include "06_coroutines/event_loop.hpp"
#include "tests/support/stage_support.hpp"

namespace sixways::coroutines::testing_support {

using namespace sixways::testing_support;

// Runs exactly one turn of the loop: what is ready now runs, what that schedules waits.
inline void run_one_turn(EventLoop& loop) {
    loop.call_soon([&loop] { loop.stop(); });
    loop.run_forever();
}

// run_until_complete with a watchdog. Tests sleep for an hour to mean "until cancelled"; if a
// cancellation is lost, the test fails after `limit` (run_until_complete throws std::logic_error
// when the loop stops first) instead of hanging.
template <class Awaitable>
auto run_within(EventLoop& loop, Awaitable awaitable, Duration limit = std::chrono::seconds(5)) {
    auto on_watchdog = [&loop] { loop.stop(); };
    TimerGuard watchdog(loop.call_later(limit, on_watchdog));
    return loop.run_until_complete(std::move(awaitable));
}

// Nothing left behind in the loop: no timer, no descriptor.
inline void expect_loop_is_clean(const EventLoop& loop) {
    EXPECT_EQ(loop.pending_timers(), 0u) << "a timer was left behind";
    EXPECT_EQ(loop.watched_descriptors(), 0u) << "a descriptor is still watched";
}


struct Counted {
    static inline int constructed = 0;
    static inline int destroyed = 0;
    static inline int copies = 0;
    static int alive() { return constructed - destroyed; }

    int value = 0;
    explicit Counted(int value = 0) : value(value) { ++constructed; }
    Counted(const Counted& other) : value(other.value) {
        ++constructed;
        ++copies;
    }
    Counted(Counted&& other) noexcept : value(other.value) { ++constructed; }
    Counted& operator=(const Counted&) = default;
    Counted& operator=(Counted&&) = default;
    ~Counted() { ++destroyed; }
};

// True if some epoll instance of this process still watches `fd`: the kernel lists each watched
// descriptor as a "tfd:" line in /proc/self/fdinfo/<epoll fd>. A check from outside the loop,
// independent of its own bookkeeping.
inline bool epoll_watches(int fd) {
    DIR* directory = opendir("/proc/self/fd");
    if (directory == nullptr) return false;
    bool found = false;
    while (dirent* entry = readdir(directory)) {
        std::ifstream info(std::string("/proc/self/fdinfo/") + entry->d_name);
        std::string word;
        while (info >> word) {
            if (word != "tfd:") continue;
            int watched = -1;
            if (info >> watched && watched == fd) found = true;
        }
    }
    closedir(directory);
    return found;
}

// A connected pair of non-blocking stream sockets.
inline std::pair<int, int> socket_pair() {
    int fds[2] = {-1, -1};
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) != 0) {
        ADD_FAILURE() << "socketpair failed";
    }
    return {fds[0], fds[1]};
}

// Every test of this stage checks, when it ends, that it leaked no Counted object and no
// descriptor.
class LeakCheckedTest : public ::testing::Test {
protected:
    void SetUp() override {
        alive_before_ = Counted::alive();
        descriptors_before_ = open_descriptors();
    }
    void TearDown() override {
        EXPECT_EQ(Counted::alive(), alive_before_) << "Counted objects leaked (or destroyed twice)";
        EXPECT_EQ(open_descriptors(), descriptors_before_) << "descriptors leaked";
    }

private:
    int alive_before_ = 0;
    int descriptors_before_ = 0;
};

}  // namespace sixways::coroutines::testing_support
