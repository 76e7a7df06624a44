// Stage 04's fetcher against an in-process lab server (and a few hand-made peers): one result per
// request from one thread, the concurrency limit, each kind of deadline, running out of
// descriptors, and no descriptor left open. What every stage must do is checked by the conformance
// suite, joined at the bottom of this file.
#include "04_callbacks/fetch.hpp"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "common/http.hpp"
#include "common/url.hpp"
#include "lab/labserver.hpp"
#include "tests/conformance.hpp"
#include "tests/support/stage_support.hpp"

namespace {

using namespace std::chrono_literals;
using namespace sixways::testing_support;  // request_for, on_loopback, FullBacklog, ...
using sixways::Clock;
using sixways::ErrorKind;
using sixways::Options;
using sixways::Request;
using sixways::Result;
using sixways::callbacks::fetch_all;

// A port on 127.0.0.1 where nothing listens: bound for a moment to find a free one, then released.
std::string refused_url() {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), length), 0);
    EXPECT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length), 0);
    ::close(fd);
    return "http://127.0.0.1:" + std::to_string(ntohs(address.sin_port)) + "/";
}

// A server for one connection with a small receive buffer, which reads the request, then answers
// "ok". A request of eight megabytes is more than a socket's send buffer may grow to by
// default (tcp_wmem allows 4 MB), so the client's send() takes it in pieces, each after waiting for
// the socket to turn writable again.
class SlowReader {
public:
    SlowReader() {
        // The accepted socket inherits the listener's receive buffer size; set it before listen().
        listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        const int small = 64 * 1024;
        ::setsockopt(listener_, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t length = sizeof address;
        if (::bind(listener_, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
            ::listen(listener_, 1) != 0 ||
            ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
            ADD_FAILURE() << "cannot listen on 127.0.0.1";
        }
        port_ = ntohs(address.sin_port);
        thread_ = std::thread([this] { serve(); });
    }
    ~SlowReader() {
        thread_.join();
        ::close(listener_);
    }
    std::string url(const std::string& path) const {
        return "http://127.0.0.1:" + std::to_string(port_) + path;
    }
    // Everything the client sent; read only after the fetch has returned.
    const std::string& received() const { return received_; }

private:
    void serve() {
        const timeval five_seconds{5, 0};  // bounds the test if the client never comes
        ::setsockopt(listener_, SOL_SOCKET, SO_RCVTIMEO, &five_seconds, sizeof five_seconds);
        const int client = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
        if (client < 0) return;
        ::setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &five_seconds, sizeof five_seconds);
        char buffer[64 * 1024];
        while (!received_.ends_with("\r\n\r\n")) {
            const ssize_t n = ::recv(client, buffer, sizeof buffer, 0);
            if (n <= 0) break;
            received_.append(buffer, static_cast<std::size_t>(n));
        }
        const std::string response = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        ::send(client, response.data(), response.size(), MSG_NOSIGNAL);
        ::close(client);
    }

    int listener_ = -1;
    std::uint16_t port_ = 0;
    std::thread thread_;
    std::string received_;
};

TEST(Callbacks, RunsEveryRequestAtOnceOnTheCallingThread) {
    sixways::lab::LabServer server(on_loopback(50ms));
    server.start();
    const std::vector<Request> requests = numbered_requests(server, 30);
    const std::thread::id caller = std::this_thread::get_id();
    std::vector<int> deliveries(requests.size(), 0);
    Options options = with_timeout(10s);
    options.on_result = [&](std::size_t index, const Result& result) {
        EXPECT_EQ(std::this_thread::get_id(), caller);
        EXPECT_NE(result.timing.done, Clock::time_point{}) << "on_result came too early";
        ++deliveries.at(index);
    };
    const std::vector<Result> results = fetch_all(requests, options);

    ASSERT_EQ(results.size(), requests.size());
    for (std::size_t k = 0; k < results.size(); ++k) {
        ASSERT_TRUE(results[k].ok()) << k << ": " << results[k].error_message;
        const std::string path = "/numbered/" + std::to_string(k);
        EXPECT_NE(results[k].response.body.find(path), std::string::npos)
            << results[k].response.body;
    }
    EXPECT_EQ(deliveries, std::vector<int>(requests.size(), 1));
    EXPECT_GT(most_in_flight(results), 1u);
}

TEST(Callbacks, StartsTheNextRequestWhenOneFinishesButKeepsAtMostCInFlight) {
    sixways::lab::LabServer server(on_loopback(30ms));
    server.start();
    const std::vector<Request> requests = numbered_requests(server, 24);
    Options options = with_timeout(10s);
    options.concurrency = 4;
    const std::vector<Result> results = fetch_all(requests, options);

    ASSERT_EQ(results.size(), requests.size());
    for (const Result& result : results) EXPECT_TRUE(result.ok()) << result.error_message;
    EXPECT_LE(most_in_flight(results), 4u);
    EXPECT_GT(most_in_flight(results), 1u);
}

TEST(Callbacks, SendsARequestTooBigForTheSocketBuffersInPiecesWithoutLosingAByte) {
    SlowReader server;
    const Request request = request_for(server.url("/" + std::string(8'000'000, 'a')));
    const std::vector<Result> results = fetch_all({request}, with_timeout(5s));
    ASSERT_EQ(results.size(), 1u);
    ASSERT_TRUE(results[0].ok()) << results[0].error_message;
    EXPECT_EQ(results[0].response.body, "ok");
    EXPECT_TRUE(server.received() == sixways::build_get_request(request.url))
        << "the server got " << server.received().size() << " bytes, not the request";
}

TEST(Callbacks, GivesUpAHandshakeThatHangsAtTheDeadline) {
    FullBacklog server;
    const std::vector<Result> results = fetch_all({request_for(server.url())}, with_timeout(300ms));
    ASSERT_EQ(results.size(), 1u);
    EXPECT_EQ(results[0].error, ErrorKind::timeout);
    EXPECT_EQ(results[0].error_message, "timeout after 300 ms while connecting");
    EXPECT_EQ(results[0].timing.connected, Clock::time_point{});
}

TEST(Callbacks, GivesUpAServerThatNeverAnswersAtTheDeadline) {
    sixways::lab::LabServer server(on_loopback(0ms));
    server.start();
    const std::vector<Result> results =
        fetch_all({request_for(server.url("/fault/hang"))}, with_timeout(300ms));
    ASSERT_EQ(results.size(), 1u);
    EXPECT_EQ(results[0].error, ErrorKind::timeout);
    EXPECT_EQ(results[0].error_message, "timeout after 300 ms while waiting");
    EXPECT_NE(results[0].timing.sent, Clock::time_point{});
}

TEST(Callbacks, FailsARequestThatFindsNoDescriptorWithLimitAndGoesOn) {
#ifdef SIXWAYS_SANITIZE_UNDEFINED
    GTEST_SKIP() << "UBSan's vptr check needs a pipe() to probe memory, and this test leaves no "
                    "descriptor free: it would report a false error. The other builds run it.";
#endif
    sixways::lab::LabServer server(on_loopback(0ms));
    server.start();
    const std::vector<Request> requests = {request_for(server.url("/first")),
                                           request_for(server.url("/second")),
                                           request_for(server.url("/third"))};
    DescriptorsLeft one_descriptor_left(1);  // for the loop's epoll descriptor; then none
    Options options = with_timeout(5s);
    // All three start at once; the first fails inside its start(), and then the limit goes back up.
    options.on_result = [&](std::size_t, const Result&) { one_descriptor_left.restore(); };
    const std::vector<Result> results = fetch_all(requests, options);

    ASSERT_EQ(results.size(), 3u);
    EXPECT_EQ(results[0].error, ErrorKind::limit);
    EXPECT_EQ(results[0].error_message, "socket: Too many open files");
    EXPECT_TRUE(results[1].ok()) << results[1].error_message;
    EXPECT_TRUE(results[2].ok()) << results[2].error_message;
}

// Requests that fail inside start() finish before the loop has even run. Starting the next one
// from the finished one's callback would recurse once per request and overflow the stack.
TEST(Callbacks, ALongRunOfImmediateFailuresDoesNotRecurse) {
    Request no_address;
    no_address.url = sixways::parse_url("http://127.0.0.1:1/");
    const std::vector<Request> requests(20'000, no_address);
    Options options = with_timeout(1s);
    options.concurrency = 1;
    std::size_t delivered = 0;
    options.on_result = [&](std::size_t, const Result&) { ++delivered; };
    const std::vector<Result> results = fetch_all(requests, options);

    ASSERT_EQ(results.size(), requests.size());
    EXPECT_EQ(delivered, requests.size());
    for (const Result& result : results) ASSERT_EQ(result.error, ErrorKind::resolve);
}

TEST(Callbacks, LeavesNoDescriptorOpen) {
    const int before = open_descriptors();
    {
        sixways::lab::LabServer server(on_loopback(0ms));
        server.start();
        FullBacklog hanging_handshake;
        const std::vector<Request> requests = {
            request_for(server.url("/ok")),           request_for(server.url("/fault/reset")),
            request_for(server.url("/fault/hang")),   request_for(server.url("/fault/bad-status")),
            request_for(refused_url()),               request_for(hanging_handshake.url()),
            request_for(server.url("/fault/keep-open")),
        };
        const std::vector<Result> results = fetch_all(requests, with_timeout(300ms));
        ASSERT_EQ(results.size(), requests.size());
        EXPECT_TRUE(results[0].ok()) << results[0].error_message;
        EXPECT_EQ(results[2].error, ErrorKind::timeout);
        EXPECT_EQ(results[4].error, ErrorKind::connect);
        EXPECT_EQ(results[5].error, ErrorKind::timeout);
        EXPECT_TRUE(results[6].ok()) << results[6].error_message;
    }
    EXPECT_EQ(open_descriptors(), before);
}

}  // namespace

namespace {
const StageUnderTest callbacks{"04_callbacks", &sixways::callbacks::fetch_all, STAGE_BINARY};
}  // namespace

INSTANTIATE_TEST_SUITE_P(Callbacks, ConformanceCore, testing::Values(callbacks), StageName());
INSTANTIATE_TEST_SUITE_P(Callbacks, Conformance, testing::Values(callbacks), StageName());
