// Exercise 3's split fetch: the socket and the response come back as values of co_await, errors as
// exceptions, and a deadline around the whole reaches the wait inside it.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "06_coroutines/event_loop.hpp"
#include "06_coroutines/socket.hpp"
#include "06_coroutines/task.hpp"
#include "06_coroutines/wait_for.hpp"
#include "lab/labserver.hpp"
#include "split_fetch.hpp"
#include "tests/support/stage_support.hpp"

namespace {

using namespace std::chrono_literals;
using sixways::Address;
using sixways::Options;
using sixways::Request;
using sixways::Response;
using sixways::coroutines::Coroutine;
using sixways::coroutines::EventLoop;
using sixways::coroutines::Socket;
using sixways::coroutines::SocketError;
using sixways::coroutines::TimeoutError;
using sixways::coroutines::TimerGuard;
using sixways::coroutines::wait_for;
using sixways::lab::LabServer;
using sixways::solutions::connect_to_any;
using sixways::solutions::fetch_split;
using sixways::testing_support::on_loopback;
using sixways::testing_support::open_descriptors;
using sixways::testing_support::request_for;
using sixways::testing_support::SilentServer;
using sixways::testing_support::with_timeout;

// Runs the coroutine to its end, or stops the loop after 10 s, so that a solution that never
// finishes fails its test (run_until_complete throws when the loop stops first) instead of hanging.
template <class T>
T run_bounded(EventLoop& loop, Coroutine<T> coroutine) {
    auto stop = [&loop] { loop.stop(); };
    TimerGuard watchdog(loop.call_later(10s, stop));
    return loop.run_until_complete(std::move(coroutine));
}

// The port the socket that connect_to_any returns is connected to.
Coroutine<int> peer_port(EventLoop& loop, const std::vector<Address>& addresses) {
    const Socket socket = co_await connect_to_any(loop, addresses);
    sockaddr_in peer{};
    socklen_t length = sizeof peer;
    if (::getpeername(socket.fd(), reinterpret_cast<sockaddr*>(&peer), &length) != 0) co_return -1;
    co_return ntohs(peer.sin_port);
}

TEST(SplitFetch, TheResponseComesBackAsTheValueOfCoAwait) {
    LabServer server(on_loopback(0ms));
    server.start();
    const Request request = request_for(server.url("/split"));
    const Options options = with_timeout(5s);
    EventLoop loop;
    const Response response = run_bounded(loop, fetch_split(loop, request, options));
    EXPECT_EQ(response.status, 200);
    EXPECT_NE(response.body.find("/split"), std::string::npos) << response.body;
    EXPECT_EQ(loop.watched_descriptors(), 0u);  // the socket is closed and unwatched
}

TEST(SplitFetch, ConnectToAnyReturnsTheSocketOfTheFirstAddressThatAccepts) {
    const std::vector<Address> refused = request_for(SilentServer().url()).addresses;  // gone: refuses
    LabServer server(on_loopback(0ms));
    server.start();
    std::vector<Address> addresses = refused;
    const std::vector<Address> answering = request_for(server.url("/")).addresses;
    addresses.insert(addresses.end(), answering.begin(), answering.end());
    EventLoop loop;
    EXPECT_EQ(run_bounded(loop, peer_port(loop, addresses)), server.port());
}

TEST(SplitFetch, ConnectToAnyThrowsTheLastErrorWhenNoAddressAccepts) {
    const std::vector<Address> refused = request_for(SilentServer().url()).addresses;
    EventLoop loop;
    try {
        run_bounded(loop, peer_port(loop, refused));
        ADD_FAILURE() << "connect_to_any returned a socket";
    } catch (const SocketError& error) {
        EXPECT_STREQ(error.what(), "connect: Connection refused");
    }
    EXPECT_THROW(run_bounded(loop, peer_port(loop, {})), std::invalid_argument);
}

TEST(SplitFetch, AResponseCutShortIsAnException) {
    LabServer server(on_loopback(0ms));
    server.start();
    const Request request = request_for(server.url("/fault/close"));  // closes before any byte
    const Options options = with_timeout(5s);
    EventLoop loop;
    EXPECT_THROW(run_bounded(loop, fetch_split(loop, request, options)), std::runtime_error);
}

// A server that accepts and never answers: the wait is in receive_response, two levels down. The
// deadline's cancel must reach it, unwind all three coroutines, and close the socket.
TEST(SplitFetch, ADeadlineAroundItReachesTheWaitInsideAndClosesTheSocket) {
    SilentServer server;
    const Request request = request_for(server.url());
    const Options options = with_timeout(5s);
    EventLoop loop;
    const int descriptors = open_descriptors();
    EXPECT_THROW(run_bounded(loop, wait_for(loop, fetch_split(loop, request, options), 50ms)), TimeoutError);
    EXPECT_EQ(loop.watched_descriptors(), 0u);
    EXPECT_EQ(open_descriptors(), descriptors);  // our socket is closed (the server keeps its end)
}

}  // namespace
