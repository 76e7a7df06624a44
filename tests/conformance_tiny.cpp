// The tiny level of the conformance suite: the cases every tiny version (NN_tiny) passes, and that
// each of them would otherwise repeat in its own test file. A tiny version has no deadline, so
// nothing here makes it wait for ever (no /fault/hang, no /fault/stall, no silent peer that never
// answers). What one tiny version shows and the others do not (one request after another, a thread
// per request, non-blocking sockets, how often epoll is called) stays in its own
// tests/tiny_test.cpp.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "common/json_reader.hpp"
#include "lab/labserver.hpp"
#include "tests/conformance.hpp"
#include "tests/conformance_support.hpp"
#include "tests/support/stage_support.hpp"

using namespace std::chrono_literals;
using sixways::Clock;
using sixways::ErrorKind;
using sixways::Json;
using sixways::Options;
using sixways::Request;
using sixways::Result;
using sixways::Timing;
using sixways::lab::LabServer;
using sixways::testing_support::numbered_requests;
using sixways::testing_support::on_loopback;
using sixways::testing_support::open_descriptors;
using sixways::testing_support::request_for;
using sixways::testing_support::SilentServer;

namespace {

// The stage's fetch_all under a watchdog: tiny has no deadline, so a bug would hang the binary.
std::vector<Result> fetch(const StageUnderTest& stage, const std::vector<Request>& requests,
                          const Options& options = {}) {
    const sixways::testing_support::Watchdog watchdog(stage.name + "'s fetch_all", 60s);
    return stage.fetch_all(requests, options);
}

// A URL on 127.0.0.1 where nothing listens: a SilentServer's port, closed again at once.
std::string refused_url() { return SilentServer().url(); }

sixways::conformance::ChildOutput run_tiny(const StageUnderTest& stage,
                                          const std::vector<std::string>& args) {
    return sixways::conformance::run_program(stage.binary, args, 20s);
}

// How many spans of a --trace file there are of each phase ("connect", "send", "wait",
// "receive"), and of whole requests ("request").
std::map<std::string, int> spans_in_trace(const std::string& path) {
    const Json trace = sixways::parse_json(sixways::conformance::contents_of(path));
    std::map<std::string, int> count;
    for (const Json& event : trace.at("traceEvents").items) {
        const Json* category = event.find("cat");
        if (category == nullptr || category->string == "resolve") continue;
        ++count[category->string == "phase" ? event.at("name").string : category->string];
    }
    return count;
}

}  // namespace

// ---- fetch_all ----

TEST_P(ConformanceTiny, RecordsEachPhaseInOrder) {
    LabServer server(on_loopback(20ms));
    server.start();
    const std::vector<Result> results = fetch(GetParam(), numbered_requests(server, 3));
    ASSERT_EQ(results.size(), 3u);
    for (const Result& result : results) {
        ASSERT_TRUE(result.ok()) << result.error_message;
        const Timing& timing = result.timing;
        EXPECT_NE(timing.start, Clock::time_point{});
        EXPECT_LE(timing.start, timing.connected);
        EXPECT_LE(timing.connected, timing.sent);
        EXPECT_LE(timing.sent, timing.first_byte);
        EXPECT_LE(timing.first_byte, timing.done);
    }
}

TEST_P(ConformanceTiny, TurnsFaultsIntoErrorsAndLeavesNoDescriptorOpen) {
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

        const std::vector<Result> results = fetch(GetParam(), requests);

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

// on_result may be called from other threads (02_tiny calls it from each request's thread); each
// call touches only its own request's counter.
TEST_P(ConformanceTiny, TellsOnResultOnceForEachRequestWithItsResult) {
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
        if (index != 5) {
            EXPECT_GT(result.response.body_bytes, 0u) << index;
        }
    };

    const std::vector<Result> results = fetch(GetParam(), requests, options);

    ASSERT_EQ(results.size(), requests.size());
    for (std::size_t k = 0; k < calls.size(); ++k) EXPECT_EQ(calls[k], 1) << "request " << k;
    EXPECT_GT(results[0].response.body_bytes, 0u);
    EXPECT_TRUE(results[0].response.body.empty());
    EXPECT_TRUE(results[0].response.headers.empty());
}

TEST_P(ConformanceTiny, SendsARequestLargerThanTheSocketBuffersInPieces) {
    // A 16 MB path, and a peer that reads nothing for a moment: more than the socket buffers hold
    // until it reads, so send() takes the request in parts, and the rest goes once the socket is
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

    const std::vector<Result> results = fetch(GetParam(), {request_for(url)});
    answer.join();

    ASSERT_EQ(results.size(), 1u);
    ASSERT_TRUE(results[0].ok()) << results[0].error_message;
    EXPECT_EQ(results[0].response.body, "ok");
    EXPECT_GT(received, std::size_t{16} << 20) << "the whole request, in pieces";
}

// ---- the binary ----

TEST_P(ConformanceTiny, ReportsLatencyAndTracesEveryPhaseOfEveryRequest) {
    const StageUnderTest& stage = GetParam();
    LabServer server(on_loopback(200ms));  // long enough for three requests at once to overlap
    server.start();
    const std::string trace = ::testing::TempDir() + stage.name + "_trace.json";
    const auto output = run_tiny(stage, {"3", "--url", server.url("/"), "--json", "--trace", trace});
    EXPECT_EQ(output.exit_status, 0) << output.err;
    const Json report = sixways::parse_json(output.out);
    EXPECT_EQ(report.at("stage").string, stage.name);
    EXPECT_EQ(report.at("ok").number, 3);
    EXPECT_GE(report.at("latency_ms").at("p50").number, 200) << "the server's delay at least";
    if (stage.one_at_a_time) {
        EXPECT_EQ(report.at("concurrency").number, 1) << "one request after another";
    } else {
        EXPECT_GT(report.at("concurrency").number, 1) << "not one after another";
    }
    const std::map<std::string, int> spans = spans_in_trace(trace);
    for (const char* name : {"request", "connect", "send", "wait", "receive"}) {
        EXPECT_EQ(spans.count(name) ? spans.at(name) : 0, 3) << name;
    }
    std::remove(trace.c_str());
}

TEST_P(ConformanceTiny, RefusesTimeoutConcurrencyAndUnknownOptionsAsBadUsageWithoutConnecting) {
    const StageUnderTest& stage = GetParam();
    LabServer server(on_loopback(0ms));
    server.start();
    for (const std::vector<std::string>& options :
         {std::vector<std::string>{"--timeout", "2s"}, {"--timeout=500ms"}, {"--concurrency", "1"},
          {"--concurrency", "10"}}) {
        std::vector<std::string> args = {"3", "--url", server.url("/")};
        args.insert(args.end(), options.begin(), options.end());
        const auto output = run_tiny(stage, args);
        EXPECT_EQ(output.exit_status, 2) << options[0];
        EXPECT_EQ(output.out, "");
        const std::string name = options[0].substr(0, options[0].find('='));
        EXPECT_NE(output.err.find(name + " is not offered by " + stage.name), std::string::npos)
            << output.err;
        EXPECT_NE(output.err.find(stage.full_stage), std::string::npos) << "points to the full stage: "
                                                                        << output.err;
    }
    const auto unknown = run_tiny(stage, {"3", "--url", server.url("/"), "--one-at-a-time"});
    EXPECT_EQ(unknown.exit_status, 2) << unknown.err;
    EXPECT_EQ(unknown.out, "");
    EXPECT_NE(unknown.err.find("--one-at-a-time"), std::string::npos) << unknown.err;
    EXPECT_EQ(server.stats().accepted, 0u) << "bad usage made a connection";
}

TEST_P(ConformanceTiny, HelpSaysItWaitsUntilCtrlCAndLeavesOutWhatItDoesNotOffer) {
    const StageUnderTest& stage = GetParam();
    const auto output = run_tiny(stage, {"--help"});
    EXPECT_EQ(output.exit_status, 0) << output.err;
    const std::string usage = "usage: " + stage.name + " [N] [--url URL] [--json] [--trace FILE] [--help]\n";
    EXPECT_EQ(output.out.rfind(usage, 0), 0u) << output.out;
    EXPECT_NE(output.out.find("a server that never answers is waited for until Ctrl-C"), std::string::npos)
        << output.out;
    EXPECT_NE(output.out.find("Not offered here: --concurrency, --timeout"), std::string::npos)
        << output.out;
}
