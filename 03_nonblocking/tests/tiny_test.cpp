// 03_tiny: the core and the tiny level of the conformance suite (tests/conformance_core.cpp,
// tests/conformance_tiny.cpp), then what only this tiny version has to show. Tiny has no deadline,
// so it is never sent anything that would make it wait for ever (no /fault/hang, no /fault/stall),
// and the one silent peer here is answered by the test itself.
#include <poll.h>
#include <sys/socket.h>

#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "03_nonblocking/tiny.hpp"
#include "common/descriptor.hpp"
#include "lab/labserver.hpp"
#include "tests/conformance.hpp"
#include "tests/support/stage_support.hpp"

namespace sixways::nonblocking::tiny {
namespace {

using namespace std::chrono_literals;
using lab::LabServer;
using testing_support::expect_each_numbered_body;
using testing_support::most_in_flight;
using testing_support::numbered_requests;
using testing_support::on_loopback;
using testing_support::request_for;
using testing_support::SilentServer;

std::vector<Result> fetch(const std::vector<Request>& requests, const Options& options = {}) {
    const testing_support::Watchdog watchdog("03_tiny's fetch_all", 60s);
    return fetch_all(requests, options);
}

TEST(NonblockingTinyFetchAll, RunsEveryRequestAtOnceOnTheCallingThread) {
    LabServer server(on_loopback(100ms));
    server.start();
    const std::vector<Request> requests = numbered_requests(server, 20);
    std::vector<std::thread::id> threads;
    Options options;
    options.on_result = [&threads](std::size_t, const Result&) {
        threads.push_back(std::this_thread::get_id());
    };

    const std::vector<Result> results = fetch(requests, options);

    ASSERT_EQ(results.size(), requests.size());
    expect_each_numbered_body(results);
    EXPECT_GT(most_in_flight(results), 1u) << "not one after another";
    EXPECT_EQ(threads, std::vector<std::thread::id>(requests.size(), std::this_thread::get_id()));
}

// One request's head, read from `fd` up to its blank line, each piece waited for at most 5 s.
std::string read_request(int fd) {
    std::string request;
    char buffer[1024];
    while (request.find("\r\n\r\n") == std::string::npos) {
        pollfd entry{fd, POLLIN, 0};
        if (::poll(&entry, 1, 5000) != 1) break;
        const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
        if (n <= 0) break;
        request.append(buffer, static_cast<std::size_t>(n));
    }
    return request;
}

// A peer that answers neither request until both have arrived. One thread on blocking sockets
// would wait for ever for the first answer, and never connect the second; on non-blocking ones,
// the loop has both requests sent before either answer comes.
TEST(NonblockingTinyFetchAll, SendsTheNextRequestWhileTheFirstWaitsForItsAnswer) {
    auto peer = std::make_unique<SilentServer>();
    const std::vector<Request> requests = {request_for(peer->url()), request_for(peer->url())};
    std::vector<Result> results;
    std::thread fetching([&] { results = fetch(requests); });

    const std::string answer = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";
    Descriptor first(peer->accept());
    Descriptor second;
    try {
        second = Descriptor(peer->accept());
    } catch (const std::runtime_error&) {
        ADD_FAILURE() << "the second request did not connect while the first waited for its answer";
    }
    if (second) {
        EXPECT_NE(read_request(first.fd()).find("GET /silent "), std::string::npos);
        EXPECT_NE(read_request(second.fd()).find("GET /silent "), std::string::npos);
        ::send(second.fd(), answer.data(), answer.size(), MSG_NOSIGNAL);
        ::send(first.fd(), answer.data(), answer.size(), MSG_NOSIGNAL);
    }
    // Without a second connection, closing the first and the listener ends the fetch all the same.
    first.close();
    second.close();
    peer.reset();
    fetching.join();
    if (!second) return;

    ASSERT_EQ(results.size(), 2u);
    for (const Result& result : results) {
        ASSERT_TRUE(result.ok()) << result.error_message;
        EXPECT_EQ(result.response.body, "ok");
    }
}

}  // namespace
}  // namespace sixways::nonblocking::tiny

const StageUnderTest nonblocking_tiny{"03_tiny", &sixways::nonblocking::tiny::fetch_all, STAGE_BINARY, false,
                                      "03_nonblocking"};
INSTANTIATE_TEST_SUITE_P(NonblockingTiny, ConformanceCore, testing::Values(nonblocking_tiny), StageName());
INSTANTIATE_TEST_SUITE_P(NonblockingTiny, ConformanceTiny, testing::Values(nonblocking_tiny), StageName());
