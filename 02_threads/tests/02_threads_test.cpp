// Stage 02's own tests: threads, a pool of C of them, and what happens when the system refuses one.
// What every stage must do is checked by the conformance suite, joined at the bottom of this file.
// These tests also run under ThreadSanitizer (ctest label `threads`), so N stays small.
#include "02_threads/fetch.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/address.hpp"
#include "common/url.hpp"
#include "lab/labserver.hpp"
#include "tests/child_process.hpp"
#include "tests/conformance.hpp"
#include "common/json_reader.hpp"

namespace {

using namespace std::chrono_literals;
using sixways::Clock;
using sixways::ErrorKind;
using sixways::Options;
using sixways::Request;
using sixways::Result;
using sixways::threads::fetch_all;

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

// Which threads delivered which results. on_result is called from the worker threads at the same
// time, so everything it touches is behind a mutex.
struct Deliveries {
    std::mutex mutex;
    std::vector<std::size_t> indexes;
    std::set<std::thread::id> threads;

    void record(std::size_t index) {
        const std::lock_guard<std::mutex> lock(mutex);
        indexes.push_back(index);
        threads.insert(std::this_thread::get_id());
    }
};

void expect_each_numbered_body(const std::vector<Result>& results) {
    for (std::size_t k = 0; k < results.size(); ++k) {
        ASSERT_TRUE(results[k].ok()) << k << ": " << results[k].error_message;
        EXPECT_NE(results[k].response.body.find("/numbered/" + std::to_string(k)),
                  std::string::npos)
            << results[k].response.body;
    }
}

TEST(Threads, RunsEveryRequestOnAThreadOfItsOwnWhenNotLimited) {
    sixways::lab::LabServer server(on_loopback(100ms));
    server.start();
    const std::vector<Request> requests = numbered_requests(server, 40);
    Deliveries deliveries;
    Options options = with_timeout(10s);
    options.on_result = [&](std::size_t index, const Result&) { deliveries.record(index); };
    const std::vector<Result> results = fetch_all(requests, options);

    ASSERT_EQ(results.size(), requests.size());
    expect_each_numbered_body(results);
    std::sort(deliveries.indexes.begin(), deliveries.indexes.end());
    std::vector<std::size_t> each_once(requests.size());
    for (std::size_t k = 0; k < each_once.size(); ++k) each_once[k] = k;
    EXPECT_EQ(deliveries.indexes, each_once);
    // No thread is joined before all are started, so no two can share an id.
    EXPECT_EQ(deliveries.threads.size(), requests.size());
    EXPECT_EQ(deliveries.threads.count(std::this_thread::get_id()), 0u);
    EXPECT_GT(most_in_flight(results), 1u);
}

TEST(Threads, KeepsAtMostCRequestsInFlightWithAPoolOfCThreads) {
    sixways::lab::LabServer server(on_loopback(50ms));
    server.start();
    const std::vector<Request> requests = numbered_requests(server, 24);
    Deliveries deliveries;
    Options options = with_timeout(10s);
    options.concurrency = 4;
    options.on_result = [&](std::size_t index, const Result&) { deliveries.record(index); };
    const std::vector<Result> results = fetch_all(requests, options);

    ASSERT_EQ(results.size(), requests.size());
    expect_each_numbered_body(results);
    EXPECT_EQ(deliveries.indexes.size(), requests.size());
    EXPECT_LE(deliveries.threads.size(), 4u);
    EXPECT_EQ(deliveries.threads.count(std::this_thread::get_id()), 0u);
    EXPECT_LE(most_in_flight(results), 4u);
    EXPECT_GT(most_in_flight(results), 1u);
}

TEST(Threads, StartsNoMoreWorkersThanRequests) {
    sixways::lab::LabServer server(on_loopback(0ms));
    server.start();
    const std::vector<Request> requests = numbered_requests(server, 3);
    Deliveries deliveries;
    Options options = with_timeout(5s);
    options.concurrency = 100;
    options.on_result = [&](std::size_t index, const Result&) { deliveries.record(index); };
    const std::vector<Result> results = fetch_all(requests, options);

    ASSERT_EQ(results.size(), 3u);
    expect_each_numbered_body(results);
    EXPECT_LE(deliveries.threads.size(), 3u);
}

// The system's limit on threads is hard to reach on purpose in-process, so this runs the binary as
// a user id that owns no other process, allowed only a handful of processes and threads
// (RLIMIT_NPROC, which counts both). Root ignores that limit, hence the change of user; setpriv
// and prlimit are the util-linux tools for the two steps.
TEST(Threads, FailsOnlyTheRequestsWhoseThreadTheSystemRefuses) {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root, to run the binary as another user";
    if (::access("/usr/bin/setpriv", X_OK) != 0 || ::access("/usr/bin/prlimit", X_OK) != 0) {
        GTEST_SKIP() << "needs /usr/bin/setpriv and /usr/bin/prlimit (util-linux)";
    }
    sixways::lab::LabServer server(on_loopback(300ms));
    server.start();
    // A user id of its own per test process, so that two runs at once do not share the limit.
    const std::string user = std::to_string(40000 + ::getpid() % 20000);
    // Six tasks: the process, the command line's Ctrl-C watcher, maybe a sanitizer's own thread,
    // and a few workers. The requests' threads are all asked for within a few milliseconds, long
    // before the first one finishes (300 ms), so most are refused.
    const sixways::conformance::ChildOutput run = sixways::conformance::run_program(
        "/usr/bin/setpriv",
        {"--reuid=" + user, "--regid=" + user, "--clear-groups", "/usr/bin/prlimit", "--nproc=6",
         "--", STAGE_BINARY, "30", "--url", server.url("/"), "--timeout", "5", "--json"},
        30s);

    ASSERT_FALSE(run.killed);
    EXPECT_EQ(run.exit_status, 1) << run.err;
    const sixways::Json report = sixways::parse_json(run.out);
    ASSERT_NE(report.find("ok"), nullptr) << run.out;
    ASSERT_NE(report.find("errors"), nullptr) << run.out;
    const sixways::Json* limit = report.find("errors")->find("limit");
    ASSERT_NE(limit, nullptr) << run.out;
    EXPECT_GT(report.find("ok")->number, 0) << run.out;
    EXPECT_GT(limit->number, 0) << run.out;
    EXPECT_EQ(report.find("ok")->number + limit->number, 30) << run.out;
    EXPECT_NE(run.err.find("pthread_create: Resource temporarily unavailable"), std::string::npos)
        << run.err;
}

TEST(Threads, StopsAServerThatTricklesBytesAtTheRequestsDeadline) {
    EndlessTrickle server;
    const std::vector<Result> results = fetch_all({request_for(server.url())}, with_timeout(300ms));
    ASSERT_EQ(results.size(), 1u);
    EXPECT_EQ(results[0].error, ErrorKind::timeout);
    EXPECT_EQ(results[0].error_message, "timeout after 300 ms while receiving");
    EXPECT_NE(results[0].timing.first_byte, Clock::time_point{});  // bytes did arrive
}

TEST(Threads, FailsARequestThatFindsNoDescriptorWithLimitAndGoesOn) {
    sixways::lab::LabServer server(on_loopback(0ms));
    server.start();
    const std::vector<Request> requests = {request_for(server.url("/first")),
                                           request_for(server.url("/second"))};
    NoDescriptorLeft no_descriptor_left;
    Options options = with_timeout(5s);
    options.concurrency = 1;  // one worker, so the second request starts after the first failed
    // Descriptors come back once the first request has failed.
    options.on_result = [&](std::size_t, const Result&) { no_descriptor_left.restore(); };
    const std::vector<Result> results = fetch_all(requests, options);

    ASSERT_EQ(results.size(), 2u);
    EXPECT_EQ(results[0].error, ErrorKind::limit);
    EXPECT_EQ(results[0].error_message, "socket: Too many open files");
    EXPECT_TRUE(results[1].ok()) << results[1].error_message;
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(Threads, Conformance,
                         testing::Values(StageUnderTest{"02_threads", &sixways::threads::fetch_all,
                                                        STAGE_BINARY}),
                         StageName());
