// Stage 03's own tests: the busy loop with its concurrency limit, deadlines kept without any call
// that waits, and the one-at-a-time variant. What every stage must do is checked by the
// conformance suite, joined at the bottom of this file for both ways of running the stage.
#include "03_nonblocking/fetch.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/address.hpp"
#include "common/url.hpp"
#include "lab/labserver.hpp"
#include "tests/conformance.hpp"

namespace {

using namespace std::chrono_literals;
using sixways::Clock;
using sixways::ErrorKind;
using sixways::Options;
using sixways::Request;
using sixways::Result;
using sixways::nonblocking::fetch_all;
using sixways::nonblocking::fetch_all_one_at_a_time;

Request request_for(const std::string& url) {
    Request request;
    request.url = sixways::parse_url(url);
    request.addresses = sixways::resolve(request.url);
    return request;
}

sixways::lab::LabServerOptions on_loopback(sixways::Duration delay) {
    sixways::lab::LabServerOptions options;
    options.hosts = {"127.0.0.1"};
    options.port = 0;
    options.delay = delay;
    return options;
}

// The most requests whose [start, done] spans overlap at any instant.
std::size_t most_in_flight(const std::vector<Result>& results) {
    std::vector<std::pair<Clock::time_point, int>> events;  // -1 sorts before +1 at equal times
    for (const Result& result : results) {
        events.emplace_back(result.timing.start, +1);
        events.emplace_back(result.timing.done, -1);
    }
    std::sort(events.begin(), events.end());
    std::size_t in_flight = 0, most = 0;
    for (const auto& [time, change] : events) {
        in_flight = change > 0 ? in_flight + 1 : in_flight - 1;
        most = std::max(most, in_flight);
    }
    return most;
}

// A listening socket on 127.0.0.1 bound to a free port.
int listen_on_loopback(int backlog, std::uint16_t& port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
        ::listen(fd, backlog) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
        ADD_FAILURE() << "cannot listen on 127.0.0.1";
    }
    port = ntohs(address.sin_port);
    return fd;
}

// A server for one connection that sends its response one byte every 10 ms, headers included, and
// needs three seconds to finish, ten times the tests' deadline. Each recv() gets a byte quickly, so
// only a deadline on the whole request, not a timeout on each call, ends it sooner.
class EndlessTrickle {
public:
    EndlessTrickle() : listener_(listen_on_loopback(1, port_)), thread_([this] { serve(); }) {}
    ~EndlessTrickle() {
        stop_ = true;
        thread_.join();
        ::close(listener_);
    }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/"; }

private:
    void serve() {
        // accept() gives up every 100 ms, so that the thread can see stop_ if no client comes.
        const timeval tenth{0, 100'000};
        ::setsockopt(listener_, SOL_SOCKET, SO_RCVTIMEO, &tenth, sizeof tenth);
        int client = -1;
        while (!stop_ && client < 0) client = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
        if (client < 0) return;
        const std::string response =
            "HTTP/1.1 200 OK\r\nContent-Length: 260\r\n\r\n" + std::string(260, 'x');
        for (char byte : response) {
            if (stop_ || ::send(client, &byte, 1, MSG_NOSIGNAL) != 1) break;  // the client left
            std::this_thread::sleep_for(10ms);
        }
        ::close(client);
    }

    std::uint16_t port_ = 0;
    int listener_;
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

// A listening socket that never accepts, with its queue of finished handshakes already full. The
// kernel then drops every new handshake (SYN) to it, so a connect() neither succeeds nor fails:
// the client retries for minutes, unless it gives up first.
class FullBacklog {
public:
    FullBacklog() : listener_(listen_on_loopback(0, port_)) {
        for (int i = 0; i < 8; ++i) {
            const int filler = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
            sockaddr_in address{};
            address.sin_family = AF_INET;
            address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            address.sin_port = htons(port_);
            ::connect(filler, reinterpret_cast<sockaddr*>(&address), sizeof address);
            fillers_.push_back(filler);
        }
    }
    ~FullBacklog() {
        for (int filler : fillers_) ::close(filler);
        ::close(listener_);
    }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/"; }

private:
    std::uint16_t port_ = 0;
    int listener_;
    std::vector<int> fillers_;
};

// Lowers the process's descriptor limit so that the next socket() fails with EMFILE, until
// restore() or the end of the scope. A new descriptor always takes the lowest free number, which
// must be below the limit: so the limit becomes that number.
class NoDescriptorLeft {
public:
    NoDescriptorLeft() {
        ::getrlimit(RLIMIT_NOFILE, &saved_);
        const int lowest_free = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
        ::close(lowest_free);
        rlimit lowered = saved_;
        lowered.rlim_cur = static_cast<rlim_t>(lowest_free);
        ::setrlimit(RLIMIT_NOFILE, &lowered);
    }
    ~NoDescriptorLeft() { restore(); }
    void restore() { ::setrlimit(RLIMIT_NOFILE, &saved_); }

private:
    rlimit saved_{};
};

Options with_timeout(sixways::Duration timeout) {
    Options options;
    options.timeout = timeout;
    return options;
}

std::vector<Request> numbered_requests(const sixways::lab::LabServer& server, int count) {
    std::vector<Request> requests;
    for (int k = 0; k < count; ++k) {
        requests.push_back(request_for(server.url("/numbered/" + std::to_string(k))));
    }
    return requests;
}

void expect_each_numbered_body(const std::vector<Result>& results) {
    for (std::size_t k = 0; k < results.size(); ++k) {
        ASSERT_TRUE(results[k].ok()) << k << ": " << results[k].error_message;
        EXPECT_NE(results[k].response.body.find("/numbered/" + std::to_string(k)),
                  std::string::npos)
            << results[k].response.body;
    }
}

TEST(NonBlocking, RunsEveryRequestAtOnceOnTheCallingThread) {
    sixways::lab::LabServer server(on_loopback(50ms));
    server.start();
    const std::vector<Request> requests = numbered_requests(server, 30);
    const std::thread::id caller = std::this_thread::get_id();
    std::vector<int> deliveries(requests.size(), 0);
    Options options = with_timeout(10s);
    options.on_result = [&](std::size_t index, const Result&) {
        EXPECT_EQ(std::this_thread::get_id(), caller);
        ++deliveries.at(index);
    };
    const std::vector<Result> results = fetch_all(requests, options);

    ASSERT_EQ(results.size(), requests.size());
    expect_each_numbered_body(results);
    EXPECT_EQ(deliveries, std::vector<int>(requests.size(), 1));
    EXPECT_GT(most_in_flight(results), 1u);
}

TEST(NonBlocking, KeepsAtMostCRequestsInFlight) {
    sixways::lab::LabServer server(on_loopback(50ms));
    server.start();
    const std::vector<Request> requests = numbered_requests(server, 24);
    Options options = with_timeout(10s);
    options.concurrency = 4;
    const std::vector<Result> results = fetch_all(requests, options);

    ASSERT_EQ(results.size(), requests.size());
    expect_each_numbered_body(results);
    EXPECT_LE(most_in_flight(results), 4u);
    EXPECT_GT(most_in_flight(results), 1u);
}

// A body starts by echoing the path and the request's number since the server started
// ("path=/x id=7"), which differs between two runs; the part before " id=" must not.
std::string echoed_path(const std::string& body) { return body.substr(0, body.find(" id=")); }

// The naive variant must differ only in having one request in flight at a time.
TEST(NonBlocking, OneAtATimeGivesTheSameResultsAsTheDefaultOneAfterAnother) {
    sixways::lab::LabServer server(on_loopback(20ms));
    server.start();
    const std::vector<std::string> paths = {
        "/same/0",        "/same/1",           "/chunked/3000",     "/status/404",
        "/fault/reset",   "/fault/bad-status", "/fault/keep-open",  "/fault/hang",
        "/fault/close",   "/same/2",
    };
    std::vector<Request> requests;
    for (const std::string& path : paths) requests.push_back(request_for(server.url(path)));
    const Options options = with_timeout(500ms);
    const std::vector<Result> all_at_once = fetch_all(requests, options);
    const std::vector<Result> one_at_a_time = fetch_all_one_at_a_time(requests, options);

    ASSERT_EQ(all_at_once.size(), paths.size());
    ASSERT_EQ(one_at_a_time.size(), paths.size());
    for (std::size_t k = 0; k < paths.size(); ++k) {
        SCOPED_TRACE(paths[k]);
        EXPECT_EQ(one_at_a_time[k].error, all_at_once[k].error);
        EXPECT_EQ(one_at_a_time[k].error_message, all_at_once[k].error_message);
        EXPECT_EQ(one_at_a_time[k].response.status, all_at_once[k].response.status);
        EXPECT_EQ(echoed_path(one_at_a_time[k].response.body),
                  echoed_path(all_at_once[k].response.body));
    }
    EXPECT_TRUE(one_at_a_time[0].ok()) << one_at_a_time[0].error_message;
    EXPECT_EQ(one_at_a_time[7].error, ErrorKind::timeout);
    EXPECT_EQ(most_in_flight(one_at_a_time), 1u);
    EXPECT_GT(most_in_flight(all_at_once), 1u);
}

TEST(NonBlocking, StopsAServerThatTricklesBytesAtTheRequestsDeadline) {
    for (auto fetch : {&fetch_all, &fetch_all_one_at_a_time}) {
        EndlessTrickle server;
        const std::vector<Result> results = fetch({request_for(server.url())}, with_timeout(300ms));
        ASSERT_EQ(results.size(), 1u);
        EXPECT_EQ(results[0].error, ErrorKind::timeout);
        EXPECT_EQ(results[0].error_message, "timeout after 300 ms while receiving");
        EXPECT_NE(results[0].timing.first_byte, Clock::time_point{});  // bytes did arrive
    }
}

TEST(NonBlocking, GivesUpAHandshakeThatHangsAtTheDeadline) {
    for (auto fetch : {&fetch_all, &fetch_all_one_at_a_time}) {
        FullBacklog server;
        const std::vector<Result> results = fetch({request_for(server.url())}, with_timeout(300ms));
        ASSERT_EQ(results.size(), 1u);
        EXPECT_EQ(results[0].error, ErrorKind::timeout);
        EXPECT_EQ(results[0].error_message, "timeout after 300 ms while connecting");
        EXPECT_EQ(results[0].timing.connected, Clock::time_point{});
    }
}

TEST(NonBlocking, FailsARequestThatFindsNoDescriptorWithLimitAndGoesOn) {
    sixways::lab::LabServer server(on_loopback(0ms));
    server.start();
    const std::vector<Request> requests = {request_for(server.url("/first")),
                                           request_for(server.url("/second"))};
    NoDescriptorLeft no_descriptor_left;
    Options options = with_timeout(5s);
    options.concurrency = 1;  // so the second request starts after the first has failed
    // Descriptors come back once the first request has failed.
    options.on_result = [&](std::size_t, const Result&) { no_descriptor_left.restore(); };
    const std::vector<Result> results = fetch_all(requests, options);

    ASSERT_EQ(results.size(), 2u);
    EXPECT_EQ(results[0].error, ErrorKind::limit);
    EXPECT_EQ(results[0].error_message, "socket: Too many open files");
    EXPECT_TRUE(results[1].ok()) << results[1].error_message;
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(
    NonBlocking, Conformance,
    testing::Values(StageUnderTest{"03_nonblocking", &sixways::nonblocking::fetch_all, STAGE_BINARY}),
    StageName());

// The naive variant keeps the same contract; its binary is not run (it would run the default).
INSTANTIATE_TEST_SUITE_P(NonBlockingOneAtATime, Conformance,
                         testing::Values(StageUnderTest{
                             "03_nonblocking_one_at_a_time",
                             &sixways::nonblocking::fetch_all_one_at_a_time, ""}),
                         StageName());
