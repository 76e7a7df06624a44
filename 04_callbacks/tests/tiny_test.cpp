// 04_tiny: the core of the conformance suite (tests/conformance_core.cpp), then what only tiny has
// to show: its fetch_all against the lab server in-process, how often its loop wakes up, and its
// binary. Tiny has no deadline, so it is never sent anything that would make it wait for ever (no
// /fault/hang, no /fault/stall, no silent peer): the rest of the conformance suite, which has
// those, runs against 04_callbacks.
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "04_callbacks/tiny.hpp"
#include "common/json_reader.hpp"
#include "common/limits.hpp"
#include "lab/labserver.hpp"
#include "tests/child_process.hpp"
#include "tests/conformance.hpp"
#include "tests/support/epoll_refusal.hpp"
#include "tests/support/stage_support.hpp"

namespace {

// The epoll_wait calls this thread has made (the in-process lab server's thread is not counted).
// This definition stands in for the C library's in this program, as tests/support's epoll_ctl and
// recv do: it counts, then makes the system call.
thread_local int epoll_wait_calls = 0;

}  // namespace

extern "C" int epoll_wait(int epoll_fd, epoll_event* events, int max_events, int timeout) {
    ++epoll_wait_calls;
    return static_cast<int>(::syscall(SYS_epoll_pwait, epoll_fd, events, max_events, timeout, nullptr, 0));
}

namespace sixways::callbacks::tiny {
namespace {

using namespace std::chrono_literals;
using lab::LabServer;
using testing_support::numbered_requests;
using testing_support::on_loopback;
using testing_support::open_descriptors;
using testing_support::request_for;
using testing_support::SilentServer;

std::vector<Result> fetch(const std::vector<Request>& requests, const Options& options = {}) {
    const testing_support::Watchdog watchdog("04_tiny's fetch_all", 60s);
    return fetch_all(requests, options);
}

// A URL on 127.0.0.1 where nothing listens: a SilentServer's port, closed again at once.
std::string refused_url() { return SilentServer().url(); }

// The sockets of this process connected to a server on `port` (the client's ends, not the lab
// server's), and how many of them are in non-blocking mode.
struct ClientSockets {
    int open = 0;
    int non_blocking = 0;
};
ClientSockets client_sockets_to(std::uint16_t port) {
    ClientSockets found;
    for (int fd = 0; fd < 1024; ++fd) {
        struct stat status {};
        if (::fstat(fd, &status) != 0 || !S_ISSOCK(status.st_mode)) continue;
        sockaddr_in peer{};
        socklen_t length = sizeof peer;
        if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &length) != 0) continue;
        if (peer.sin_family != AF_INET || ntohs(peer.sin_port) != port) continue;
        ++found.open;
        if ((::fcntl(fd, F_GETFL) & O_NONBLOCK) != 0) ++found.non_blocking;
    }
    return found;
}

// ---- fetch_all ----

// A slow request first, a quick one second: the quick one finishes first, while the slow one's
// socket is still open, and in non-blocking mode. A blocking fetch would finish them in order.
TEST(TinyFetchAll, WaitsForEverySocketAtOnceWithoutBlockingOnAny) {
    LabServer server(on_loopback(0ms));
    server.start();
    const std::vector<Request> requests = {request_for(server.url("/delay/300")),
                                           request_for(server.url("/quick"))};
    ClientSockets while_slow_one_waits;
    Options options;
    options.on_result = [&](std::size_t index, const Result&) {
        if (index == 1) while_slow_one_waits = client_sockets_to(server.port());
    };

    const std::vector<Result> results = fetch(requests, options);

    ASSERT_EQ(results.size(), 2u);
    ASSERT_TRUE(results[0].ok()) << results[0].error_message;
    ASSERT_TRUE(results[1].ok()) << results[1].error_message;
    EXPECT_LT(results[1].timing.done, results[0].timing.done) << "the quick request waited for the slow one";
    EXPECT_EQ(while_slow_one_waits.open, 1) << "the slow request's socket, and only it, was open";
    EXPECT_EQ(while_slow_one_waits.non_blocking, 1);
}

// While the server thinks, the loop sleeps in epoll_wait: a few calls for three requests, not one
// per turn of a spinning loop. Each request: one wake-up when it is connected, one when its answer
// is there; the three may share them.
TEST(TinyFetchAll, SleepsInEpollWaitWhileTheServerThinks) {
    LabServer server(on_loopback(300ms));
    server.start();
    const std::vector<Request> requests = numbered_requests(server, 3);
    const int before = epoll_wait_calls;

    const std::vector<Result> results = fetch(requests);

    testing_support::expect_each_numbered_body(results);
    EXPECT_GE(epoll_wait_calls - before, 2);
    EXPECT_LE(epoll_wait_calls - before, 6) << "the loop woke up with nothing to do";
}

// One EPOLL_CTL_ADD (the connect waits for "writable"), one MOD ("readable", once the request is
// sent), no DEL (closing the socket takes it out of epoll), and one recv() for an answer that
// arrives in one piece: the loop calls on_readable only when there is something to read.
TEST(TinyFetchAll, MakesOneAddOneModAndOneRecvPerRequest) {
    testing_support::expect_calls_per_request(&fetch_all, 1, 1);
}

TEST(TinyFetchAll, SendsARequestLargerThanTheSocketBuffersInPieces) {
    // A 16 MB path, and a peer that reads nothing for a moment: more than the socket buffers hold
    // until it reads, so send() takes the request in parts, and send_request runs again when the
    // socket is writable. (The pause only makes a partial send certain; nothing here is timed.)
    SilentServer peer;
    const std::string url = peer.url() + "/" + std::string(16 << 20, 'a');
    std::size_t received = 0;
    std::thread answer([&peer, &received] {
        const int fd = peer.accept();
        std::this_thread::sleep_for(200ms);
        std::string tail;  // the last bytes read, to see the end of the request
        char buffer[64 * 1024];
        while (tail.find("\r\n\r\n") == std::string::npos) {
            pollfd entry{fd, POLLIN, 0};
            if (::poll(&entry, 1, 10'000) != 1) break;
            const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
            if (n <= 0) break;
            received += static_cast<std::size_t>(n);
            tail = tail.substr(tail.size() > 3 ? tail.size() - 3 : 0);
            tail.append(buffer, static_cast<std::size_t>(n));
        }
        const std::string response = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        ::send(fd, response.data(), response.size(), MSG_NOSIGNAL);
        ::close(fd);
    });

    const std::vector<Result> results = fetch({request_for(url)});
    answer.join();

    ASSERT_EQ(results.size(), 1u);
    ASSERT_TRUE(results[0].ok()) << results[0].error_message;
    EXPECT_EQ(results[0].response.body, "ok");
    EXPECT_GT(received, std::size_t{16} << 20) << "the whole request, in pieces";
}

TEST(TinyFetchAll, TellsOnResultOnceForEachRequestWithItsResult) {
    LabServer server(on_loopback(0ms));
    server.start();
    std::vector<Request> requests = numbered_requests(server, 20);
    requests[5] = request_for(refused_url());  // a failed request is told of too
    Options options;
    options.body_cap = 0;  // as the command line asks: count the body, keep none of it
    options.keep_headers = false;
    std::vector<int> calls(requests.size(), 0);
    options.on_result = [&calls](std::size_t index, const Result& result) {
        ASSERT_LT(index, calls.size());
        ++calls[index];
        EXPECT_EQ(result.ok(), index != 5) << index << ": " << result.error_message;
    };

    const std::vector<Result> results = fetch(requests, options);

    ASSERT_EQ(results.size(), requests.size());
    for (std::size_t k = 0; k < calls.size(); ++k) EXPECT_EQ(calls[k], 1) << "request " << k;
    EXPECT_GT(results[0].response.body_bytes, 0u);
    EXPECT_TRUE(results[0].response.body.empty());
    EXPECT_TRUE(results[0].response.headers.empty());
}

TEST(TinyFetchAll, RecordsEachPhaseInOrder) {
    LabServer server(on_loopback(20ms));
    server.start();
    const std::vector<Result> results = fetch({request_for(server.url("/timed"))});
    ASSERT_TRUE(results.at(0).ok()) << results[0].error_message;
    const Timing& timing = results[0].timing;
    EXPECT_NE(timing.start, Clock::time_point{});
    EXPECT_LE(timing.start, timing.connected);
    EXPECT_LE(timing.connected, timing.sent);
    EXPECT_LE(timing.sent, timing.first_byte);
    EXPECT_LE(timing.first_byte, timing.done);
}

TEST(TinyFetchAll, TurnsFaultsIntoErrorsAndLeavesNoDescriptorOpen) {
    const int before = open_descriptors();
    {
        LabServer server(on_loopback(0ms));
        server.start();
        // Faults that end by themselves: tiny has no deadline for the ones that do not.
        const std::vector<Request> requests = {
            request_for(server.url("/fault/reset")),      request_for(server.url("/fault/close")),
            request_for(server.url("/fault/bad-status")), request_for(server.url("/fault/short-body")),
            request_for(server.url("/fault/keep-open")),  request_for(refused_url()),
            request_for(server.url("/ok")),
        };

        const std::vector<Result> results = fetch(requests);

        ASSERT_EQ(results.size(), requests.size());
        EXPECT_EQ(results[0].error, ErrorKind::receive) << results[0].error_message;
        EXPECT_EQ(results[1].error, ErrorKind::receive) << results[1].error_message;
        EXPECT_EQ(results[2].error, ErrorKind::protocol) << results[2].error_message;
        EXPECT_EQ(results[3].error, ErrorKind::receive) << results[3].error_message;
        EXPECT_TRUE(results[4].ok()) << "complete by its framing, though the server keeps it open: "
                                     << results[4].error_message;
        EXPECT_EQ(results[5].error, ErrorKind::connect);
        EXPECT_EQ(results[5].error_message, "connect: Connection refused");
        EXPECT_TRUE(results[6].ok()) << results[6].error_message;
    }
    EXPECT_EQ(open_descriptors(), before);
}

// ---- the binary ----

conformance::ChildOutput run_tiny(const std::vector<std::string>& args) {
    return conformance::run_program(STAGE_BINARY, args, 20s);
}

TEST(TinyBinary, RefusesEveryOtherOptionAsBadUsageWithoutSendingAnything) {
    LabServer server(on_loopback(0ms));
    server.start();
    for (const std::vector<std::string>& options :
         {std::vector<std::string>{"--timeout", "2s"}, {"--timeout=500ms"}, {"--concurrency", "10"}}) {
        std::vector<std::string> args = {"3", "--url", server.url("/")};
        args.insert(args.end(), options.begin(), options.end());
        const auto output = run_tiny(args);
        EXPECT_EQ(output.exit_status, 2) << options[0];
        EXPECT_EQ(output.out, "");
        EXPECT_NE(output.err.find(options[0].substr(0, options[0].find('=')) + " is not offered by 04_tiny"),
                  std::string::npos)
            << output.err;
        EXPECT_NE(output.err.find("04_callbacks"), std::string::npos) << "points to the full stage: "
                                                                      << output.err;
    }
    const auto unknown = run_tiny({"3", "--url", server.url("/"), "--one-at-a-time"});
    EXPECT_EQ(unknown.exit_status, 2) << unknown.err;
    EXPECT_EQ(unknown.out, "");
    EXPECT_NE(unknown.err.find("--one-at-a-time"), std::string::npos) << unknown.err;
    EXPECT_EQ(server.stats().accepted, 0u) << "bad usage made a connection";
}

TEST(TinyBinary, HelpSaysWhatItDoesNotOfferAndThatItWaitsUntilCtrlC) {
    const auto output = run_tiny({"--help"});
    EXPECT_EQ(output.exit_status, 0) << output.err;
    EXPECT_EQ(output.out.rfind("usage: 04_tiny [N] [--url URL] [--json] [--trace FILE] [--help]\n", 0), 0u)
        << output.out;
    EXPECT_NE(output.out.find("Not offered here: --concurrency, --timeout"), std::string::npos)
        << output.out;
    EXPECT_NE(output.out.find("a server that never answers is waited for until Ctrl-C"), std::string::npos)
        << output.out;
}

// Tiny has no limit on the requests in flight, on purpose (04_callbacks has one), so the command
// line leaves them as they are: under `ulimit -n 64` those that find no descriptor fail with
// `limit`, and the others get through.
TEST(TinyBinary, KeepsNoLimitUnderALowDescriptorLimit) {
#ifdef SIXWAYS_SANITIZE_UNDEFINED
    GTEST_SKIP() << "UBSan's vptr check needs a pipe() to probe memory, and this run leaves no "
                    "descriptor free: it would report a false error. The other builds run it.";
#endif
    if (::access("/usr/bin/prlimit", X_OK) != 0) GTEST_SKIP() << "needs /usr/bin/prlimit";
    LabServer server(on_loopback(100ms));
    server.start();
    const auto output = conformance::run_program(
        "/usr/bin/prlimit", {"--nofile=64", "--", STAGE_BINARY, "200", "--url", server.url("/"), "--json"},
        30s);
    EXPECT_EQ(output.exit_status, 1) << output.err;
    const Json report = parse_json(output.out);
    EXPECT_GT(report.at("ok").number, 0) << output.out;
    EXPECT_EQ(report.at("ok").number + report.at("errors").at("limit").number, 200) << output.out;
    EXPECT_NE(output.err.find("x socket: Too many open files"), std::string::npos) << output.err;
    EXPECT_EQ(output.err.find("requests in flight"), std::string::npos) << output.err;
}

}  // namespace
}  // namespace sixways::callbacks::tiny

INSTANTIATE_TEST_SUITE_P(CallbacksTiny, ConformanceCore,
                         testing::Values(StageUnderTest{"04_tiny", &sixways::callbacks::tiny::fetch_all,
                                                        STAGE_BINARY}),
                         StageName());
