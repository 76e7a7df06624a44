// The checks of what a stage is about, beyond the right answers (which the conformance suite
// checks): every request sent whole and no descriptor left open (every stage), requests in flight
// at once (02 on), sockets that never block and a loop that goes on while one response is half
// there (03 on), a loop that sleeps while the server thinks (04 on). None of them measures a
// duration: each one counts or orders something. A bound on a wait is there only so that a broken
// file ends the check instead of hanging it. runner.cpp says which stages each one applies to.
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/descriptor.hpp"
#include "common/json_reader.hpp"
#include "lab/check/check.hpp"
#include "lab/labserver.hpp"
#include "tests/conformance_support.hpp"
#include "tests/support/epoll_wait_count.hpp"
#include "tests/support/stage_support.hpp"

using namespace std::chrono_literals;
using sixways::Descriptor;
using sixways::Options;
using sixways::Request;
using sixways::Result;
using sixways::lab::LabServer;
using sixways::testing_support::client_sockets_to;
using sixways::testing_support::ClientSockets;
using sixways::testing_support::on_loopback;
using sixways::testing_support::open_descriptors;
using sixways::testing_support::request_for;
using sixways::testing_support::SilentServer;

namespace {

// What a peer received of one request: bytes up to the blank line that ends its head, or until the
// client sent nothing more for `quiet` (a client that stopped sending half way).
struct ReceivedRequest {
    std::size_t bytes = 0;
    bool whole = false;  // the blank line came
};
ReceivedRequest read_request(int fd, int quiet_ms) {
    ReceivedRequest received;
    std::string tail;  // the last bytes read, to find the blank line across two pieces
    char buffer[64 * 1024];
    while (!received.whole) {
        pollfd entry{fd, POLLIN, 0};
        if (::poll(&entry, 1, quiet_ms) != 1) break;
        const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
        if (n <= 0) break;
        received.bytes += static_cast<std::size_t>(n);
        tail = tail.substr(tail.size() > 3 ? tail.size() - 3 : 0);
        tail.append(buffer, static_cast<std::size_t>(n));
        received.whole = tail.find("\r\n\r\n") != std::string::npos;
    }
    return received;
}

void send_all(int fd, const std::string& bytes) {
    for (std::size_t sent = 0; sent < bytes.size();) {
        const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) return;
        sent += static_cast<std::size_t>(n);
    }
}

// The stage's fetch_all, then `peer` joined, even when fetch_all throws (a thread destroyed
// unjoined would end the check with std::terminate, which says nothing of why).
std::vector<Result> fetch_joining(const StageUnderTest& stage, const std::vector<Request>& requests,
                                  const Options& options, std::thread& peer) {
    try {
        std::vector<Result> results = sixways::conformance::fetch(stage, requests, options);
        peer.join();
        return results;
    } catch (...) {
        peer.join();
        throw;
    }
}

}  // namespace

// A 16 MB path: more than the socket buffers hold while the peer reads nothing, so send() takes
// the request in parts, and the rest must follow. The peer reads until the request's blank line, or until the client has sent
// nothing for 3 s; then it answers either way, so a client that stopped sending half way gets an
// answer and the check ends.
TEST_P(StageChecks, SendsALongRequestWhole) {
    SilentServer peer;
    const std::string path = "/" + std::string(16 << 20, 'a');
    ReceivedRequest received;
    std::string problem;
    std::thread answer([&] {
        try {
            const Descriptor connection(peer.accept());
            // Nothing read for a moment: the socket buffers fill up, so that one send() cannot
            // take the whole request even while the peer reads (nothing here is timed).
            std::this_thread::sleep_for(200ms);
            received = read_request(connection.fd(), 3000);
            send_all(connection.fd(), "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
        } catch (const std::exception& error) {
            problem = error.what();
        }
    });
    const std::vector<Result> results =
        fetch_joining(GetParam().stage, {request_for(peer.url() + path)}, {}, answer);

    if (!problem.empty()) FAIL() << "no connection came to the server (" << problem << ")";
    ASSERT_EQ(results.size(), 1u);
    if (!received.whole) {
        ADD_FAILURE() << received.bytes << " bytes of a request of more than " << (16 << 20)
                      << " reached the server, then nothing more for 3 s";
    }
}

// A few good requests, a refused one and two faults, then as many descriptors open as before.
TEST_P(StageChecks, LeavesNoDescriptorOpen) {
    const int before = open_descriptors();
    std::vector<Result> results;
    {
        LabServer server(on_loopback(0ms));
        server.start();
        const std::string refused = SilentServer().url();  // its port closes again at once
        results = sixways::conformance::fetch(
            GetParam().stage,
            {request_for(server.url("/a")), request_for(server.url("/fault/close")), request_for(refused),
             request_for(server.url("/fault/reset")), request_for(server.url("/b"))},
            {});
    }
    const int after = open_descriptors();
    ASSERT_EQ(results.size(), 5u);
    if (after != before) {
        ADD_FAILURE() << before << " descriptors open before fetch_all, " << after << " after it returned";
    }
}

// Three requests that succeed: each one's timing has every phase stamped, in order. The report's
// latency and --trace's phases are drawn from these stamps; one left unset loses a phase silently.
TEST_P(StageChecks, StampsEachPhaseInOrder) {
    LabServer server(on_loopback(20ms));
    server.start();
    const std::vector<Result> results = sixways::conformance::fetch(
        GetParam().stage, {request_for(server.url("/a")), request_for(server.url("/b")), request_for(server.url("/c"))},
        {});
    ASSERT_EQ(results.size(), 3u);
    for (const Result& result : results) {
        ASSERT_TRUE(result.ok()) << result.error_message;
        const sixways::Timing& t = result.timing;
        const sixways::Clock::time_point unset{};
        std::string missing;
        if (t.start == unset) missing += " start";
        if (t.connected == unset) missing += " connected";
        if (t.sent == unset) missing += " sent";
        if (t.first_byte == unset) missing += " first_byte";
        if (t.done == unset) missing += " done";
        if (!missing.empty()) FAIL() << "timing left unset:" << missing;
        if (!(t.start <= t.connected && t.connected <= t.sent && t.sent <= t.first_byte && t.first_byte <= t.done)) {
            FAIL() << "the phases stamped out of order";
        }
    }
}

// Five requests to a server that thinks for 300 ms, through the binary: its --json report's
// "concurrency" is the most requests whose timings overlapped.
TEST_P(StageChecks, HasRequestsInFlightAtOnce) {
    LabServer server(on_loopback(300ms));
    server.start();
    const auto output =
        sixways::conformance::run_program(GetParam().stage.binary, {"5", "--url", server.url("/"), "--json"}, 20s);
    if (output.exit_status != 0) {
        FAIL() << "the binary exited with status " << output.exit_status << ": " << output.err;
    }
    const double most = sixways::parse_json(output.out).at("concurrency").number;
    if (most <= 1) ADD_FAILURE() << "at most " << most << " request in flight at any time";
}

// Three requests to a server that thinks for 500 ms: while they wait, every socket of this process
// connected to the server is in non-blocking mode (O_NONBLOCK). Looked at from this thread while
// fetch_all runs on another.
TEST_P(StageChecks, MakesEverySocketNonBlocking) {
    LabServer server(on_loopback(500ms));
    server.start();
    const std::vector<Request> requests = {request_for(server.url("/1")), request_for(server.url("/2")),
                                           request_for(server.url("/3"))};
    std::vector<Result> results;
    std::string thrown;
    std::thread fetching([&] {
        try {
            results = sixways::conformance::fetch(GetParam().stage, requests, {});
        } catch (const std::exception& error) {
            thrown = error.what();
        }
    });
    ClientSockets seen;
    for (int look = 0; look < 2000 && seen.open == 0; ++look) {  // until the first connection
        if (server.stats().requests > 0) seen = client_sockets_to(server.port());
        std::this_thread::sleep_for(1ms);
    }
    fetching.join();

    if (!thrown.empty()) FAIL() << "fetch_all threw: " << thrown;
    if (seen.open == 0) FAIL() << "no socket to the server was seen open while it thought";
    if (seen.non_blocking != seen.open) {
        ADD_FAILURE() << seen.open - seen.non_blocking << " of the " << seen.open
                      << " sockets open to the server in blocking mode";
    }
}

// Request 0's server sends the head of its response and holds the body back until request 1 has
// its result (or for 3 s). A loop that goes on with the other requests while one response is half
// there finishes request 1 first; a loop stalled in a blocking call on request 0's socket (or
// spinning on it) cannot.
TEST_P(StageChecks, GoesOnWhileOneResponseIsHalfThere) {
    SilentServer peer;
    LabServer server(on_loopback(0ms));
    server.start();
    std::mutex mutex;
    std::condition_variable told;
    std::vector<std::size_t> order;  // the requests, in the order their results came
    Options options;
    options.on_result = [&](std::size_t index, const Result&) {
        const std::lock_guard lock(mutex);
        order.push_back(index);
        told.notify_all();
    };
    std::string problem;
    std::thread answer([&] {
        try {
            const Descriptor connection(peer.accept());
            read_request(connection.fd(), 3000);
            send_all(connection.fd(), "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n");
            std::unique_lock lock(mutex);
            told.wait_for(lock, 3s, [&] { return !order.empty(); });
            lock.unlock();
            send_all(connection.fd(), "body");
        } catch (const std::exception& error) {
            problem = error.what();
        }
    });
    const std::vector<Result> results = fetch_joining(
        GetParam().stage, {request_for(peer.url()), request_for(server.url("/quick"))}, options, answer);

    if (!problem.empty()) FAIL() << "no connection came to request 0's server (" << problem << ")";
    ASSERT_EQ(results.size(), 2u);
    if (!results[1].ok()) FAIL() << "request 1 failed: " << results[1].error_message;
    if (order.size() != 2) FAIL() << "on_result was called " << order.size() << " times for 2 requests";
    if (order[0] != 1) {
        ADD_FAILURE() << "request 1 got its result only after request 0's body came: the loop waited on "
                         "request 0";
    }
}

// Three requests to a server that thinks for 300 ms. The loop should sleep in epoll_wait until a
// socket is ready: a few calls per request. A loop that wakes up with nothing to do, because it
// watches a socket for something that is always true (writable, once connected) or never sleeps,
// calls it thousands of times meanwhile.
TEST_P(StageChecks, SleepsWhileTheServerThinks) {
    LabServer server(on_loopback(300ms));
    server.start();
    const std::vector<Request> requests = {request_for(server.url("/1")), request_for(server.url("/2")),
                                           request_for(server.url("/3"))};
    const int before = sixways::testing_support::epoll_wait_calls_on_this_thread();
    const std::vector<Result> results = sixways::conformance::fetch(GetParam().stage, requests, {});
    const int calls = sixways::testing_support::epoll_wait_calls_on_this_thread() - before;

    ASSERT_EQ(results.size(), 3u);
    if (calls < 1) ADD_FAILURE() << "fetch_all never called epoll_wait";
    if (calls > 30) ADD_FAILURE() << "fetch_all called epoll_wait " << calls << " times for 3 requests";
}
