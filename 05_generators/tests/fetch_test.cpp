// Stage 05's fetch and loop. The conformance suite checks what every stage promises; the cases
// here check what is particular to generators: a fetch can be driven by hand (it knows nothing of
// epoll), closing it closes its socket, it reports the phase it was suspended in when told of a
// timeout, and the split version behaves exactly like the straight-line one.
#include <poll.h>
#include <sys/socket.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "05_generators/fetch.hpp"
#include "common/address.hpp"
#include "common/json_reader.hpp"
#include "common/url.hpp"
#include "lab/labserver.hpp"
#include "tests/child_process.hpp"
#include "tests/conformance.hpp"
#include "tests/support/stage_support.hpp"

namespace {
const StageUnderTest generators{"05_generators", &sixways::generators::fetch_all, STAGE_BINARY};
}  // namespace

INSTANTIATE_TEST_SUITE_P(Generators, ConformanceCore, testing::Values(generators), StageName());
INSTANTIATE_TEST_SUITE_P(Generators, Conformance, testing::Values(generators), StageName());

namespace sixways::generators {
namespace {

using namespace std::chrono_literals;
using testing_support::on_loopback;
using testing_support::request_for;
using testing_support::SilentServer;

// Everything the peer sends until it closes. Throws if it has not closed within 5 s.
std::string read_until_closed(int fd) {
    std::string bytes;
    char buffer[4096];
    for (;;) {
        pollfd entry{fd, POLLIN, 0};
        if (::poll(&entry, 1, 5000) != 1) {
            throw std::runtime_error("the peer did not close its socket");
        }
        const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
        if (n <= 0) return bytes;
        bytes.append(buffer, static_cast<std::size_t>(n));
    }
}

// Drives a fetch by hand with poll(), the way the loop does with epoll: `waits` times, waits for
// what it yielded and resumes it with Event::ready (fewer if it finishes). A test failure if a wait
// is not ready within 5 s.
void drive(Fetch& fetch, int waits) {
    for (int i = 0; i < waits && !fetch.done(); ++i) {
        const Wait wait = fetch.current();
        const int events = wait.interest == Interest::readable ? POLLIN : POLLOUT;
        pollfd entry{wait.fd, static_cast<short>(events), 0};
        ASSERT_EQ(::poll(&entry, 1, 5000), 1) << "wait " << i << " was never ready";
        fetch.send(Event::ready);
    }
}

// ---- Cases run against both fetches: the straight-line one and the split one ----

struct FetchUnderTest {
    const char* name;
    FetchOne fetch;
};

class FetchGenerator : public testing::TestWithParam<FetchUnderTest> {
protected:
    Fetch start(const Request& request) { return GetParam().fetch(request, options_, result_); }
    Options options_;
    Result result_;
};

INSTANTIATE_TEST_SUITE_P(BothVersions, FetchGenerator,
                         testing::Values(FetchUnderTest{"straight", &fetch_one},
                                         FetchUnderTest{"split", &fetch_one_split}),
                         [](const testing::TestParamInfo<FetchUnderTest>& info) {
                             return info.param.name;
                         });

TEST_P(FetchGenerator, DoesNothingUntilFirstResumed) {
    const Request request = request_for("http://127.0.0.1:1/");
    Fetch fetch = start(request);
    EXPECT_FALSE(fetch.done());
    EXPECT_EQ(result_.timing.start, Clock::time_point{});
}

TEST_P(FetchGenerator, FirstWaitsForItsSocketToBecomeWritable) {
    SilentServer server;
    const Request request = request_for(server.url());
    Fetch fetch = start(request);
    ASSERT_TRUE(fetch.next());
    EXPECT_EQ(fetch.current().interest, Interest::writable);
    EXPECT_GE(fetch.current().fd, 0);
    EXPECT_NE(result_.timing.start, Clock::time_point{});
}

TEST_P(FetchGenerator, CanBeDrivenByHandWithPoll) {
    lab::LabServer server(on_loopback(0ms));
    server.start();
    const Request request = request_for(server.url("/driven/by/hand"));
    Fetch fetch = start(request);
    fetch.next();
    drive(fetch, 100);
    ASSERT_TRUE(fetch.done());
    ASSERT_TRUE(result_.ok()) << result_.error_message;
    EXPECT_EQ(result_.response.status, 200);
    EXPECT_NE(result_.response.body.find("/driven/by/hand"), std::string::npos)
        << result_.response.body;
}

// An address whose family socket() rejects with EAFNOSUPPORT, as it rejects IPv6 on a machine
// without IPv6. AF_UNSPEC names no family at all, so every machine rejects it.
Address address_of_no_family() {
    Address address;
    address.storage.ss_family = AF_UNSPEC;
    address.length = sizeof(sockaddr);
    return address;
}

TEST_P(FetchGenerator, TriesTheNextAddressWhenSocketRejectsTheFirstOnesFamily) {
    lab::LabServer server(on_loopback(0ms));
    server.start();
    Request request = request_for(server.url("/after/a/rejected/family"));
    request.addresses.insert(request.addresses.begin(), address_of_no_family());
    Fetch fetch = start(request);
    fetch.next();
    drive(fetch, 100);
    ASSERT_TRUE(fetch.done());
    ASSERT_TRUE(result_.ok()) << result_.error_message;
    EXPECT_NE(result_.response.body.find("/after/a/rejected/family"), std::string::npos)
        << result_.response.body;
}

TEST_P(FetchGenerator, NamesSocketInItsErrorWhenSocketRejectsEveryAddress) {
    Request request = request_for("http://127.0.0.1:1/");
    request.addresses = {address_of_no_family(), address_of_no_family()};
    Fetch fetch = start(request);
    EXPECT_FALSE(fetch.next());  // finished without waiting for anything
    EXPECT_EQ(result_.error, ErrorKind::connect);
    EXPECT_EQ(result_.error_message, errno_message("socket", EAFNOSUPPORT));
}

TEST_P(FetchGenerator, ClosingItWhileSuspendedClosesItsSocket) {
    SilentServer server;
    const Request request = request_for(server.url());
    Fetch fetch = start(request);
    fetch.next();
    drive(fetch, 1);  // connected and sent; now waiting for the answer
    ASSERT_FALSE(fetch.done());
    ASSERT_EQ(fetch.current().interest, Interest::readable);
    fetch.close();
    const Descriptor peer(server.accept());
    const std::string received = read_until_closed(peer.fd());  // returns at the end of file
    EXPECT_EQ(received.rfind("GET /silent HTTP/1.1\r\n", 0), 0u) << received;
}

TEST_P(FetchGenerator, ReportsATimeoutWhileConnectingAsConnecting) {
    SilentServer server;
    const Request request = request_for(server.url());
    options_.timeout = 250ms;
    Fetch fetch = start(request);
    fetch.next();
    EXPECT_FALSE(fetch.send(Event::timed_out));
    EXPECT_TRUE(fetch.done());
    EXPECT_EQ(result_.error, ErrorKind::timeout);
    EXPECT_EQ(result_.error_message, "timeout after 250 ms while connecting");
}

TEST_P(FetchGenerator, ReportsATimeoutBeforeTheFirstByteAsWaiting) {
    SilentServer server;
    const Request request = request_for(server.url());
    options_.timeout = 250ms;
    Fetch fetch = start(request);
    fetch.next();
    drive(fetch, 1);
    ASSERT_EQ(fetch.current().interest, Interest::readable);
    EXPECT_FALSE(fetch.send(Event::timed_out));
    EXPECT_EQ(result_.error, ErrorKind::timeout);
    EXPECT_EQ(result_.error_message, "timeout after 250 ms while waiting");
}

TEST_P(FetchGenerator, ReportsATimeoutAfterTheFirstByteAsReceiving) {
    SilentServer server;
    const Request request = request_for(server.url());
    options_.timeout = 250ms;
    Fetch fetch = start(request);
    fetch.next();
    drive(fetch, 1);
    const Descriptor peer(server.accept());
    const std::string head = "HTTP/1.1 200 OK\r\n";
    ASSERT_EQ(::send(peer.fd(), head.data(), head.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(head.size()));
    drive(fetch, 1);  // reads the status line, waits for more
    ASSERT_FALSE(fetch.done());
    EXPECT_FALSE(fetch.send(Event::timed_out));
    EXPECT_EQ(result_.error, ErrorKind::timeout);
    EXPECT_EQ(result_.error_message, "timeout after 250 ms while receiving");
}

// ---- The loop ----

TEST(FetchLoop, TriesTheNextAddressWhenTheFirstIsRefused) {
    // With one request at a time, each new socket gets the number of the one just closed: the
    // loop must register it afresh rather than modify a registration the kernel already dropped.
    lab::LabServer server(on_loopback(0ms));
    server.start();
    const std::string refused_url = SilentServer().url();  // closed again: connections are refused
    std::vector<Request> requests;
    for (int i = 0; i < 5; ++i) {
        Request request = request_for(server.url("/second/address/" + std::to_string(i)));
        const Address refused = request_for(refused_url).addresses.front();
        request.addresses.insert(request.addresses.begin(), refused);
        requests.push_back(request);
    }
    Options options;
    options.concurrency = 1;
    options.timeout = 5s;
    const std::vector<Result> results = fetch_all(requests, options);
    for (std::size_t i = 0; i < results.size(); ++i) {
        ASSERT_TRUE(results[i].ok()) << i << ": " << results[i].error_message;
        EXPECT_NE(results[i].response.body.find("/second/address/" + std::to_string(i)),
                  std::string::npos);
    }
}

TEST(FetchLoop, ResumesATimedOutFetchWhichReportsItsPhaseAndClosesItsSocket) {
    SilentServer server;
    const std::vector<Request> requests(3, request_for(server.url()));
    Options options;
    options.timeout = 200ms;
    std::vector<int> reported(requests.size(), 0);
    options.on_result = [&reported](std::size_t index, const Result&) { ++reported.at(index); };
    const std::vector<Result> results = fetch_all(requests, options);
    for (const Result& result : results) {
        EXPECT_EQ(result.error, ErrorKind::timeout);
        EXPECT_EQ(result.error_message, "timeout after 200 ms while waiting");
    }
    EXPECT_EQ(reported, (std::vector<int>{1, 1, 1}));
    for (std::size_t i = 0; i < requests.size(); ++i) {
        const Descriptor peer(server.accept());
        EXPECT_EQ(read_until_closed(peer.fd()).rfind("GET /silent HTTP/1.1\r\n", 0), 0u);
    }
}

// Runs the same paths with `fetch`, one at a time against a fresh lab server, so that both runs
// see the same request ids in their bodies.
std::vector<Result> fetch_paths_with(FetchOne fetch, const std::vector<std::string>& paths) {
    lab::LabServer server(on_loopback(0ms));
    server.start();
    std::vector<Request> requests;
    for (const std::string& path : paths) requests.push_back(request_for(server.url(path)));
    Options options;
    options.concurrency = 1;
    options.timeout = 500ms;
    return run_fetches(requests, options, fetch);
}

TEST(FetchLoop, TheStraightAndTheSplitFetchGiveTheSameResults) {
    const std::vector<std::string> paths = {
        "/", "/bytes/300000", "/chunked/70000", "/status/404", "/redirect/1", "/fault/close",
        "/fault/reset", "/fault/partial-headers", "/fault/bad-status", "/fault/short-body",
        "/fault/big-headers", "/fault/bad-chunk", "/fault/keep-open", "/fault/no-body",
        "/fault/hang",
    };
    const std::vector<Result> straight = fetch_paths_with(&fetch_one, paths);
    const std::vector<Result> split = fetch_paths_with(&fetch_one_split, paths);
    ASSERT_EQ(straight.size(), paths.size());
    ASSERT_EQ(split.size(), paths.size());
    int errors = 0;
    for (std::size_t i = 0; i < paths.size(); ++i) {
        SCOPED_TRACE(paths[i]);
        EXPECT_EQ(straight[i].error, split[i].error);
        EXPECT_EQ(straight[i].error_message, split[i].error_message);
        EXPECT_EQ(straight[i].response.status, split[i].response.status);
        EXPECT_EQ(straight[i].response.body_bytes, split[i].response.body_bytes);
        EXPECT_TRUE(straight[i].response.body == split[i].response.body)  // too long to print
            << "the bodies differ (" << straight[i].response.body.size() << " and "
            << split[i].response.body.size() << " bytes)";
        errors += straight[i].ok() ? 0 : 1;
    }
    EXPECT_GE(errors, 8);  // the faults did fail: this is not a comparison of two empty results
    EXPECT_EQ(straight[1].response.body_bytes, 300000u);
}

// Descriptors run out: a request that gets none fails with `limit`, and the run goes on. This is
// the library call: the command line keeps the requests in flight within the descriptor limit, so
// its runs no longer get there. The limit is low while the first request starts, then back up.
TEST(FetchLoop, RunningOutOfDescriptorsGivesLimitErrorsAndTheRunCarriesOn) {
#ifdef SIXWAYS_SANITIZE_UNDEFINED
    GTEST_SKIP() << "UBSan's vptr check needs a pipe() to probe memory, and this test leaves no "
                    "descriptor free: it would report a false error. The other builds run it.";
#endif
    lab::LabServer server(on_loopback(0ms));
    server.start();
    const std::vector<Request> requests = {request_for(server.url("/first")),
                                           request_for(server.url("/second")),
                                           request_for(server.url("/third"))};
    testing_support::DescriptorsLeft one_descriptor_left(1);  // for the loop's epoll; then none
    Options options = testing_support::with_timeout(5s);
    options.on_result = [&](std::size_t, const Result&) { one_descriptor_left.restore(); };
    const std::vector<Result> results = fetch_all(requests, options);

    ASSERT_EQ(results.size(), 3u);
    EXPECT_EQ(results[0].error, ErrorKind::limit);
    EXPECT_EQ(results[0].error_message, "socket: Too many open files");
    EXPECT_TRUE(results[1].ok()) << results[1].error_message;
    EXPECT_TRUE(results[2].ok()) << results[2].error_message;
}

}  // namespace
}  // namespace sixways::generators
