// Exercise 3's fetch_with_one_retry: one fetch when the first answers (a 404 is an answer too), two
// when it fails, the second's failure when both fail, and the second's answer when only the second
// can get one.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "06_coroutines/event_loop.hpp"
#include "06_coroutines/future.hpp"
#include "06_coroutines/task.hpp"
#include "lab/labserver.hpp"
#include "retry.hpp"
#include "tests/support/stage_support.hpp"

namespace {

using namespace std::chrono_literals;
using sixways::Options;
using sixways::Request;
using sixways::Result;
using sixways::coroutines::EventLoop;
using sixways::coroutines::TimerGuard;
using sixways::lab::LabServer;
using sixways::solutions::fetch_with_one_retry;
using sixways::testing_support::on_loopback;
using sixways::testing_support::request_for;
using sixways::testing_support::SilentServer;
using sixways::testing_support::with_timeout;

// Runs the coroutine to its end, or stops the loop after 10 s, so that a solution that never
// finishes fails its test (run_until_complete throws when the loop stops first) instead of hanging.
Result run_bounded(EventLoop& loop, sixways::coroutines::Coroutine<Result> coroutine) {
    auto stop = [&loop] { loop.stop(); };
    TimerGuard watchdog(loop.call_later(10s, stop));
    return loop.run_until_complete(std::move(coroutine));
}

// What RefusesThenAnswers sends by default once it listens.
const std::string second_try_response =
    "HTTP/1.1 200 OK\r\nContent-Length: 10\r\nConnection: close\r\n\r\nsecond try";

// Runs fetch_with_one_retry on `request` (a 5 s deadline for each fetch, a 10 ms pause) to its
// end, and counts the fetches it made.
struct Retried {
    Result result;
    int attempts = 0;
};
Retried retry(const Request& request) {
    Retried retried;
    Options options = with_timeout(5s);
    options.on_result = [&retried](std::size_t, const Result&) { ++retried.attempts; };
    EventLoop loop;
    retried.result = run_bounded(loop, fetch_with_one_retry(loop, request, options, 10ms));
    return retried;
}

// A port on 127.0.0.1 that refuses connections (a bound socket that does not listen) until
// start_answering(); from then on it accepts one connection, on a thread of its own, reads the
// request, sends `response` and closes the connection. An empty `response` closes it before any
// byte, as the lab server's /fault/close does: a failure that is not a refused connect.
class RefusesThenAnswers {
public:
    explicit RefusesThenAnswers(std::string response = second_try_response)
        : response_(std::move(response)), listener_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t length = sizeof address;
        if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
            ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
            throw std::runtime_error("RefusesThenAnswers: cannot bind a socket on 127.0.0.1");
        }
        port_ = ntohs(address.sin_port);
    }
    ~RefusesThenAnswers() {
        stop_ = true;
        if (thread_.joinable()) thread_.join();
        ::close(listener_);
    }
    RefusesThenAnswers(const RefusesThenAnswers&) = delete;
    RefusesThenAnswers& operator=(const RefusesThenAnswers&) = delete;

    std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/"; }

    void start_answering() {
        if (::listen(listener_, 8) != 0) throw std::runtime_error("RefusesThenAnswers: listen failed");
        thread_ = std::thread([this] { answer_one(); });
    }

private:
    void answer_one() {
        // Until a connection comes, or the test is over (then the test has failed), at most 10 s.
        for (int waited_ms = 0; !stop_; waited_ms += 10) {
            pollfd ready{listener_, POLLIN, 0};
            if (::poll(&ready, 1, 10) == 1) break;
            if (waited_ms >= 10'000) return;
        }
        if (stop_) return;
        const int connection = ::accept(listener_, nullptr, nullptr);
        if (connection < 0) return;
        std::string request;
        char buffer[4096];
        while (request.find("\r\n\r\n") == std::string::npos) {
            pollfd readable{connection, POLLIN, 0};
            if (::poll(&readable, 1, 10'000) != 1) break;
            const ssize_t n = ::recv(connection, buffer, sizeof buffer, 0);
            if (n <= 0) break;
            request.append(buffer, static_cast<std::size_t>(n));
        }
        // The whole request is read, so the close is a clean end (FIN), not a reset for unread bytes.
        if (!response_.empty()) {
            [[maybe_unused]] const ssize_t sent =
                ::send(connection, response_.data(), response_.size(), MSG_NOSIGNAL);
        }
        ::close(connection);
    }

    const std::string response_;
    int listener_;
    std::uint16_t port_ = 0;
    std::atomic<bool> stop_{false};
    std::thread thread_;  // last: it starts once the members it uses exist
};

TEST(FetchWithOneRetry, AnAnswerAtTheFirstTryIsNotFetchedAgain) {
    LabServer server(on_loopback(0ms));
    server.start();
    const Request request = request_for(server.url("/first"));
    const auto [result, attempts] = retry(request);
    ASSERT_TRUE(result.ok()) << result.error_message;
    EXPECT_NE(result.response.body.find("/first"), std::string::npos) << result.response.body;
    EXPECT_EQ(attempts, 1);
    EXPECT_EQ(server.stats().requests_by_path["/first"], 1u);
}

// A 404 is the server's answer, not a failure of the exchange (ok() is true): asking again would
// only get the same answer.
TEST(FetchWithOneRetry, A404IsAnAnswerAndIsNotFetchedAgain) {
    LabServer server(on_loopback(0ms));
    server.start();
    const Request request = request_for(server.url("/site/missing"));  // a page the site does not have
    const auto [result, attempts] = retry(request);
    ASSERT_TRUE(result.ok()) << result.error_message;
    EXPECT_EQ(result.response.status, 404);
    EXPECT_EQ(attempts, 1);
    EXPECT_EQ(server.stats().requests_by_path["/site/missing"], 1u);
}

TEST(FetchWithOneRetry, AFailureIsFetchedExactlyOnceMore) {
    LabServer server(on_loopback(0ms));
    server.start();
    const Request request = request_for(server.url("/fault/close"));  // closes before any byte
    const auto [result, attempts] = retry(request);
    EXPECT_FALSE(result.ok());
    EXPECT_EQ(attempts, 2);
    EXPECT_EQ(server.stats().requests_by_path["/fault/close"], 2u);
}

TEST(FetchWithOneRetry, ARefusedConnectIsTriedOnceMoreAndReportsTheSecondError) {
    const Request request = request_for(SilentServer().url());  // its port refuses once it is gone
    const auto [result, attempts] = retry(request);
    EXPECT_EQ(result.error, sixways::ErrorKind::connect);
    EXPECT_EQ(result.error_message, "connect: Connection refused");
    EXPECT_EQ(attempts, 2);
}

// Two different failures, so that the result shows which one was returned: the first connect is
// refused, and the second reaches a server that closes the connection before sending any byte. The
// port starts listening as soon as the first result is in, not on a later turn of the loop, so the
// second try reaches it however the retry pauses; this test is about which failure comes back.
TEST(FetchWithOneRetry, WhenBothTriesFailTheSecondFailureIsReturned) {
    RefusesThenAnswers server("");  // once it listens, it closes the connection without answering
    const Request request = request_for(server.url());
    Options options = with_timeout(5s);
    int attempts = 0;
    bool asked = false;
    options.on_result = [&attempts, &asked, &server](std::size_t, const Result& result) {
        ++attempts;
        if (result.ok() || std::exchange(asked, true)) return;
        server.start_answering();
    };
    EventLoop loop;
    const Result result = run_bounded(loop, fetch_with_one_retry(loop, request, options, 10ms));
    EXPECT_EQ(result.error, sixways::ErrorKind::receive) << result.error_message;
    EXPECT_EQ(result.error_message, "connection closed before any response byte");
    EXPECT_EQ(attempts, 2);
}

// The first connect is refused. When that first result is in, the server is told to start
// listening, on the loop's next turn: so only a retry that gives the loop its turns while it pauses
// (co_await sleep, not ::usleep or no pause at all) finds it listening, and gets the answer.
TEST(FetchWithOneRetry, TheServerThatStartsDuringThePauseAnswersTheSecondTry) {
    RefusesThenAnswers server;
    const Request request = request_for(server.url());
    Options options = with_timeout(5s);
    EventLoop loop;
    int attempts = 0;
    bool asked = false;
    options.on_result = [&attempts, &asked, &server, &loop](std::size_t, const Result& result) {
        ++attempts;
        if (result.ok() || std::exchange(asked, true)) return;
        loop.call_soon([&server] { server.start_answering(); });
    };
    const Result result = run_bounded(loop, fetch_with_one_retry(loop, request, options, 10ms));
    ASSERT_TRUE(result.ok())
        << "a retry that blocks the loop while it pauses (::usleep) or does not pause finds the server "
           "still refusing: "
        << result.error_message;
    EXPECT_EQ(result.response.body, "second try");
    EXPECT_EQ(attempts, 2);
}

}  // namespace
