// Stage 01's own tests: one request at a time, and a deadline that bounds every blocking call.
// What every stage must do is checked by the conformance suite, joined at the bottom of this file.
#include "01_blocking/fetch.hpp"

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
using sixways::blocking::fetch_all;

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

TEST(Blocking, FetchesOneRequestAtATimeInOrderEvenWhenAskedForMore) {
    sixways::lab::LabServer server(on_loopback(20ms));
    server.start();
    std::vector<Request> requests;
    for (int k = 0; k < 5; ++k) requests.push_back(request_for(server.url("/one/" + std::to_string(k))));
    Options options = with_timeout(5s);
    options.concurrency = 5;
    std::vector<std::size_t> reported;
    const std::thread::id caller = std::this_thread::get_id();
    options.on_result = [&](std::size_t index, const Result& result) {
        EXPECT_EQ(std::this_thread::get_id(), caller);
        EXPECT_TRUE(result.ok()) << result.error_message;
        reported.push_back(index);
    };
    const std::vector<Result> results = fetch_all(requests, options);

    ASSERT_EQ(results.size(), requests.size());
    EXPECT_EQ(reported, (std::vector<std::size_t>{0, 1, 2, 3, 4}));
    EXPECT_EQ(most_in_flight(results), 1u);
    for (std::size_t k = 0; k < results.size(); ++k) {
        EXPECT_NE(results[k].response.body.find("/one/" + std::to_string(k)), std::string::npos)
            << results[k].response.body;
    }
}

TEST(Blocking, StopsAServerThatTricklesBytesAtTheRequestsDeadline) {
    EndlessTrickle server;
    const std::vector<Result> results = fetch_all({request_for(server.url())}, with_timeout(300ms));
    ASSERT_EQ(results.size(), 1u);
    EXPECT_EQ(results[0].error, ErrorKind::timeout);
    EXPECT_EQ(results[0].error_message, "timeout after 300 ms while receiving");
    EXPECT_NE(results[0].timing.first_byte, Clock::time_point{});  // bytes did arrive
}

TEST(Blocking, StopsAServerThatNeverAnswersAtTheDeadline) {
    sixways::lab::LabServer server(on_loopback(0ms));
    server.start();
    const std::vector<Result> results =
        fetch_all({request_for(server.url("/fault/hang"))}, with_timeout(200ms));
    ASSERT_EQ(results.size(), 1u);
    EXPECT_EQ(results[0].error, ErrorKind::timeout);
    EXPECT_EQ(results[0].error_message, "timeout after 200 ms while waiting");
}

TEST(Blocking, GivesUpAConnectThatHangsAtTheDeadline) {
    FullBacklog server;
    const std::vector<Result> results = fetch_all({request_for(server.url())}, with_timeout(300ms));
    ASSERT_EQ(results.size(), 1u);
    EXPECT_EQ(results[0].error, ErrorKind::timeout);
    EXPECT_EQ(results[0].error_message, "timeout after 300 ms while connecting");
    EXPECT_EQ(results[0].timing.connected, Clock::time_point{});
}

TEST(Blocking, FailsARequestThatFindsNoDescriptorWithLimitAndGoesOn) {
    sixways::lab::LabServer server(on_loopback(0ms));
    server.start();
    const std::vector<Request> requests = {request_for(server.url("/first")),
                                           request_for(server.url("/second"))};
    NoDescriptorLeft no_descriptor_left;
    Options options = with_timeout(5s);
    // Descriptors come back once the first request has failed.
    options.on_result = [&](std::size_t, const Result&) { no_descriptor_left.restore(); };
    const std::vector<Result> results = fetch_all(requests, options);

    ASSERT_EQ(results.size(), 2u);
    EXPECT_EQ(results[0].error, ErrorKind::limit);
    EXPECT_EQ(results[0].error_message, "socket: Too many open files");
    EXPECT_TRUE(results[1].ok()) << results[1].error_message;
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(Blocking, Conformance,
                         testing::Values(StageUnderTest{"01_blocking", &sixways::blocking::fetch_all,
                                                        STAGE_BINARY}),
                         StageName());
