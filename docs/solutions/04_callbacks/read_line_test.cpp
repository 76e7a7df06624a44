// Exercise 4 of chapter 04: read_line, one read with a deadline as callbacks, tested on socket
// pairs and against the lab server. Each test checks that `done` ran exactly once and that run()
// returned, which it does only when read_line has left nothing registered in the loop.
#include "read_line.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "common/http.hpp"
#include "lab/labserver.hpp"
#include "tests/support/stage_support.hpp"

namespace {

using namespace std::chrono_literals;
using sixways::callbacks::EventLoop;
using sixways::solutions::LineOutcome;
using sixways::solutions::read_line;
using sixways::testing_support::Watchdog;

// A connected pair of non-blocking UNIX stream sockets: the test reads at `ours` and plays the
// peer at `theirs`.
struct Pair {
    int ours = -1;
    int theirs = -1;
    Pair() {
        int ends[2] = {-1, -1};
        EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, ends), 0);
        ours = ends[0];
        theirs = ends[1];
    }
    ~Pair() {
        if (ours >= 0) ::close(ours);
        if (theirs >= 0) ::close(theirs);
    }
    void send(const std::string& text) const {
        ASSERT_EQ(::write(theirs, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    }
    void close_theirs() {
        ::close(theirs);
        theirs = -1;
    }
};

// Runs read_line on `fd` to its end and returns every outcome it reported (there must be one).
std::vector<LineOutcome> outcomes_of(EventLoop& loop, int fd, sixways::Duration timeout) {
    std::vector<LineOutcome> outcomes;
    read_line(loop, fd, timeout, [&](LineOutcome outcome) { outcomes.push_back(outcome); });
    Watchdog watchdog("read_line's loop", 10s);
    loop.run();
    EXPECT_FALSE(loop.remove_reader(fd)) << "read_line left its reader registered";
    return outcomes;
}

TEST(Solution04ReadLine, ReadsALineThatArrivesInPiecesOverSeveralTurns) {
    EventLoop loop;
    Pair pair;
    pair.send("HTTP/1.1 ");
    loop.call_later(20ms, [&] { pair.send("200 "); });
    loop.call_later(40ms, [&] { pair.send("OK\r\nContent-Length: 0\r\n"); });
    const std::vector<LineOutcome> outcomes = outcomes_of(loop, pair.ours, 5s);
    ASSERT_EQ(outcomes.size(), 1u);
    EXPECT_EQ(outcomes[0].line, "HTTP/1.1 200 OK");
    EXPECT_EQ(outcomes[0].error, "");
}

TEST(Solution04ReadLine, ReportsATimeoutWhenNoLineComesBeforeTheDeadline) {
    EventLoop loop;
    Pair pair;
    pair.send("no end of line");
    const std::vector<LineOutcome> outcomes = outcomes_of(loop, pair.ours, 50ms);
    ASSERT_EQ(outcomes.size(), 1u);
    EXPECT_EQ(outcomes[0].error, "timeout");
}

TEST(Solution04ReadLine, ReportsClosedWhenThePeerClosesBeforeTheEndOfTheLine) {
    EventLoop loop;
    Pair pair;
    pair.send("half a li");
    pair.close_theirs();
    const std::vector<LineOutcome> outcomes = outcomes_of(loop, pair.ours, 5s);
    ASSERT_EQ(outcomes.size(), 1u);
    EXPECT_EQ(outcomes[0].error, "closed");
}

TEST(Solution04ReadLine, ALineAndItsDeadlineInTheSameTurnGiveExactlyOneOutcome) {
    EventLoop loop;
    Pair pair;
    pair.send("ready\n");
    // A zero deadline is due in the first turn, which also finds the socket readable.
    const std::vector<LineOutcome> outcomes = outcomes_of(loop, pair.ours, 0ms);
    ASSERT_EQ(outcomes.size(), 1u);
    EXPECT_EQ(outcomes[0].line, "ready");  // readiness is collected before due timers
}

TEST(Solution04ReadLine, ReadsTheStatusLineOfTheLabServer) {
    sixways::lab::LabServer server(sixways::testing_support::on_loopback(10ms));
    server.start();
    const sixways::Request request = sixways::testing_support::request_for(server.url("/status/404"));
    ASSERT_FALSE(request.addresses.empty());
    const sixways::Address& address = request.addresses.front();
    // Connect and send the blocking way, to keep the exercise to the read; then go non-blocking.
    const int fd = ::socket(address.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::connect(fd, address.get(), address.length), 0);
    const std::string get = sixways::build_get_request(request.url);
    ASSERT_EQ(::send(fd, get.data(), get.size(), MSG_NOSIGNAL), static_cast<ssize_t>(get.size()));
    ASSERT_EQ(::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK), 0);

    EventLoop loop;
    const std::vector<LineOutcome> outcomes = outcomes_of(loop, fd, 5s);
    ::close(fd);
    ASSERT_EQ(outcomes.size(), 1u);
    EXPECT_EQ(outcomes[0].line, "HTTP/1.1 404 Not Found");
}

}  // namespace
