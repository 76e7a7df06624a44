// Exercise 6: fetch_one resumed by a poll() loop of our own, against the lab server on loopback and
// a peer that trickles bytes for ever.
#include "fetch_with_poll.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "lab/labserver.hpp"
#include "tests/support/stage_support.hpp"

namespace {

using namespace std::chrono_literals;
using sixways::ErrorKind;
using sixways::Options;
using sixways::Result;
using sixways::solutions::fetch_with_poll;
using sixways::testing_support::EndlessTrickle;
using sixways::testing_support::on_loopback;
using sixways::testing_support::request_for;
using sixways::testing_support::SilentServer;
using sixways::testing_support::Watchdog;
using sixways::testing_support::with_timeout;

TEST(Exercise6, GetsTheResponseOfItsOwnRequest) {
    const Watchdog watchdog("fetch_with_poll", 60s);
    sixways::lab::LabServer server(on_loopback(10ms));
    server.start();
    const Result result = fetch_with_poll(request_for(server.url("/resumed/by/poll")),
                                          with_timeout(5s));
    ASSERT_TRUE(result.ok()) << result.error_message;
    EXPECT_EQ(result.response.status, 200);
    EXPECT_NE(result.response.body.find("/resumed/by/poll"), std::string::npos)
        << result.response.body;
}

TEST(Exercise6, ATimeoutBeforeAnyByteSaysWaiting) {
    const Watchdog watchdog("fetch_with_poll", 60s);
    sixways::lab::LabServer server(on_loopback(0ms));
    server.start();
    const Result result = fetch_with_poll(request_for(server.url("/fault/hang")), with_timeout(200ms));
    EXPECT_EQ(result.error, ErrorKind::timeout);
    EXPECT_EQ(result.error_message, "timeout after 200 ms while waiting");
}

TEST(Exercise6, ATimeoutWhileBytesTrickleInSaysReceiving) {
    const Watchdog watchdog("fetch_with_poll", 60s);
    EndlessTrickle peer;  // one byte every 10 ms, for three seconds
    const Result result = fetch_with_poll(request_for(peer.url()), with_timeout(300ms));
    EXPECT_EQ(result.error, ErrorKind::timeout);
    EXPECT_EQ(result.error_message, "timeout after 300 ms while receiving");
}

TEST(Exercise6, ARefusedConnectionIsAConnectError) {
    const Watchdog watchdog("fetch_with_poll", 60s);
    const std::string url = SilentServer().url();  // closed again at once: its port refuses
    const Result result = fetch_with_poll(request_for(url), with_timeout(2s));
    EXPECT_EQ(result.error, ErrorKind::connect);
    EXPECT_EQ(result.error_message, "connect: Connection refused");
}

}  // namespace
