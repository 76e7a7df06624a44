// 06_tiny: the core of the conformance suite (tests/conformance_core.cpp), then what only tiny
// has to show: its fetch_all against the lab server in-process, and its binary. Tiny has no
// deadline, so it is never sent anything that would make it wait for ever (no /fault/hang, no
// /fault/stall, no silent peer): the rest of the conformance suite, which has those, runs against
// 06_coroutines.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "06_coroutines/tiny.hpp"
#include "common/json_reader.hpp"
#include "common/limits.hpp"
#include "lab/labserver.hpp"
#include "tests/child_process.hpp"
#include "tests/conformance.hpp"
#include "tests/support/stage_support.hpp"

namespace sixways::coroutines::tiny {
namespace {

using namespace std::chrono_literals;
using lab::LabServer;
using testing_support::numbered_requests;
using testing_support::on_loopback;
using testing_support::open_descriptors;
using testing_support::request_for;
using testing_support::SilentServer;

std::vector<Result> fetch(const std::vector<Request>& requests, const Options& options = {}) {
    const testing_support::Watchdog watchdog("06_tiny's fetch_all", 60s);
    return fetch_all(requests, options);
}

// A URL on 127.0.0.1 where nothing listens: a SilentServer's port, closed again at once.
std::string refused_url() { return SilentServer().url(); }

// ---- fetch_all ----

TEST(TinyFetchAll, SendsARequestLargerThanTheSocketBuffersInPieces) {
    // A 16 MB path, and a peer that reads nothing for a moment: more than the socket buffers hold
    // until it reads, so send() takes the request in parts, and the rest waits until the socket is
    // writable again. (The pause only makes a partial send certain; nothing here is timed.)
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
    const std::vector<Request> requests = numbered_requests(server, 20);
    Options options;
    options.body_cap = 0;  // as the command line asks: count the body, keep none of it
    options.keep_headers = false;
    std::vector<int> calls(requests.size(), 0);
    options.on_result = [&calls](std::size_t index, const Result& result) {
        ASSERT_LT(index, calls.size());
        ++calls[index];
        EXPECT_TRUE(result.ok()) << index << ": " << result.error_message;
        EXPECT_GT(result.response.body_bytes, 0u);
    };

    const std::vector<Result> results = fetch(requests, options);

    ASSERT_EQ(results.size(), requests.size());
    for (std::size_t k = 0; k < calls.size(); ++k) EXPECT_EQ(calls[k], 1) << "request " << k;
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
        EXPECT_TRUE(results[6].ok()) << results[6].error_message;
    }
    EXPECT_EQ(open_descriptors(), before);
}

// ---- the binary ----

conformance::ChildOutput run_tiny(const std::vector<std::string>& args) {
    return conformance::run_program(STAGE_BINARY, args, 20s);
}

TEST(TinyBinary, RefusesTimeoutAndConcurrencyAsBadUsageWithoutSendingAnything) {
    LabServer server(on_loopback(0ms));
    server.start();
    for (const std::vector<std::string>& options :
         {std::vector<std::string>{"--timeout", "2s"}, {"--timeout=500ms"}, {"--concurrency", "10"}}) {
        std::vector<std::string> args = {"3", "--url", server.url("/")};
        args.insert(args.end(), options.begin(), options.end());
        const auto output = run_tiny(args);
        EXPECT_EQ(output.exit_status, 2) << options[0];
        EXPECT_EQ(output.out, "");
        EXPECT_NE(output.err.find(options[0].substr(0, options[0].find('=')) + " is not offered by 06_tiny"),
                  std::string::npos)
            << output.err;
        EXPECT_NE(output.err.find("06_coroutines"), std::string::npos) << "points to the full runtime: "
                                                                       << output.err;
    }
    EXPECT_EQ(server.stats().accepted, 0u) << "bad usage made a connection";
}

// Tiny has no limit on the requests in flight, on purpose (06_coroutines has one), so the command
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

// Capped at a small address space, tiny still ends with its report: every request either got its
// response or failed with `limit`, "out of memory" (it leaves running out of memory to the command
// line). No abort, no internal error.
TEST(TinyBinary, ReportsEveryRequestWhenAddressSpaceIsScarce) {
#ifdef SIXWAYS_SANITIZE_SHADOW_MEMORY
    GTEST_SKIP() << "a sanitizer's shadow memory does not fit under a cap on address space";
#endif
    if (::access("/usr/bin/prlimit", X_OK) != 0) GTEST_SKIP() << "needs /usr/bin/prlimit";
    if (raise_open_file_limit() < 2500) GTEST_SKIP() << "needs 2500 descriptors";
    // The least the binary needs to be loaded at all (its --help runs), in MiB.
    long smallest = 2;
    while (smallest < 256 && conformance::run_program("/usr/bin/prlimit",
                                                      {"--as=" + std::to_string(smallest << 20), "--",
                                                       STAGE_BINARY, "--help"},
                                                      20s)
                                 .exit_status != 0) {
        ++smallest;
    }
    LabServer server(on_loopback(100ms));
    server.start();
    for (const long more : {2L, 5L, 8L, 11L}) {
        SCOPED_TRACE(std::to_string(smallest + more) + " MiB");
        const auto output = conformance::run_program(
            "/usr/bin/prlimit",
            {"--as=" + std::to_string((smallest + more) << 20), "--", STAGE_BINARY, "1000", "--url",
             server.url("/"), "--json"},
            60s);
        ASSERT_FALSE(output.killed);
        EXPECT_TRUE(output.exit_status == 0 || output.exit_status == 1)
            << "exit status " << output.exit_status << ": " << output.err;
        const Json report = parse_json(output.out);
        EXPECT_EQ(report.at("ok").number + report.at("failed").number, 1000) << output.out;
        EXPECT_EQ(output.err.find("terminate"), std::string::npos) << output.err;
        EXPECT_EQ(output.err.find("internal error"), std::string::npos) << output.err;
    }
}

TEST(TinyBinary, HelpLeavesOutWhatItDoesNotOffer) {
    const auto output = run_tiny({"--help"});
    EXPECT_EQ(output.exit_status, 0) << output.err;
    EXPECT_EQ(output.out.rfind("usage: 06_tiny [N] [--url URL] [--json] [--trace FILE] [--help]\n", 0), 0u)
        << output.out;
    EXPECT_NE(output.out.find("Not offered here: --concurrency, --timeout"), std::string::npos)
        << output.out;
}

}  // namespace
}  // namespace sixways::coroutines::tiny

INSTANTIATE_TEST_SUITE_P(Tiny, ConformanceCore,
                         testing::Values(StageUnderTest{"06_tiny", &sixways::coroutines::tiny::fetch_all, STAGE_BINARY}),
                         StageName());
