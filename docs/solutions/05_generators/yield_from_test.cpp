// Exercises 7 and 8: the "yield from" loop written once, as a generator of its own (it works, and
// its caller still needs the same loop), and an exception that crosses a level only because the
// hand-written loop passes it on.
#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "05_generators/fetch.hpp"
#include "lab/labserver.hpp"
#include "tests/support/stage_support.hpp"

namespace sixways::generators {
namespace {

using namespace std::chrono_literals;
using testing_support::expect_each_numbered_body;
using testing_support::numbered_requests;
using testing_support::on_loopback;
using testing_support::Watchdog;
using testing_support::with_timeout;

// ---- Exercise 7: "yield from", written once ----

// Drives `sub` to its end, passing each of its values up and each sent value down. It is a
// generator itself: its co_yield suspends yield_from, not whoever called it.
template <typename Yield, typename Sent>
Generator<Yield, Sent> yield_from(Generator<Yield, Sent>& sub) {
    sub.next();
    while (!sub.done()) {
        const Sent sent = co_yield sub.current();
        sub.send(sent);
    }
}

// stage 05's fetch, one level down, through yield_from. `inner` is a local of this frame, so it
// outlives `forwarding`, which holds a reference to it (locals are destroyed in reverse order).
Fetch fetch_through_yield_from(const Request& request, const Options& options, Result& result) {
    Fetch inner = fetch_one(request, options, result);
    Fetch forwarding = yield_from(inner);
    forwarding.next();
    while (!forwarding.done()) {  // the same four lines as before: nothing got shorter
        const Event event = co_yield forwarding.current();
        forwarding.send(event);
    }
}

TEST(Exercise7, TheFetchThroughYieldFromGetsEveryResponse) {
    const Watchdog watchdog("run_fetches", 60s);
    lab::LabServer server(on_loopback(20ms));
    server.start();
    const std::vector<Request> requests = numbered_requests(server, 20);
    const std::vector<Result> results =
        run_fetches(requests, with_timeout(5s), &fetch_through_yield_from);
    expect_each_numbered_body(results);
}

TEST(Exercise7, ATimeoutStillReachesTheInnermostFetch) {
    const Watchdog watchdog("run_fetches", 60s);
    lab::LabServer server(on_loopback(0ms));
    server.start();
    const std::vector<Request> requests = {testing_support::request_for(server.url("/fault/hang"))};
    const std::vector<Result> results =
        run_fetches(requests, with_timeout(200ms), &fetch_through_yield_from);
    ASSERT_EQ(results.size(), 1u);
    EXPECT_EQ(results[0].error, ErrorKind::timeout);
    // Written by the innermost fetch, which alone knows where it is suspended.
    EXPECT_EQ(results[0].error_message, "timeout after 200 ms while waiting");
}

// ---- Exercise 8: an exception through the hand-written loop ----

// Yields 0 and adds up what it is sent; throws when sent a negative number.
Generator<int, int> throw_on_negative() {
    int total = 0;
    for (;;) {
        const int sent = co_yield total;
        if (sent < 0) throw std::invalid_argument("negative");
        total += sent;
    }
}

Generator<int, int> outer() {
    Generator<int, int> inner = throw_on_negative();
    inner.next();
    while (!inner.done()) {
        const int sent = co_yield inner.current();
        inner.send(sent);  // rethrows what escaped inner's body, here, inside outer's body
    }
}

// The same loop, with one careless level that catches everything.
Generator<int, int> careless_outer() {
    Generator<int, int> inner = throw_on_negative();
    inner.next();
    while (!inner.done()) {
        const int sent = co_yield inner.current();
        try {
            inner.send(sent);
        } catch (...) {
        }
    }
}

TEST(Exercise8, AnExceptionInTheInnerGeneratorReachesTheCallerOfTheOuterOne) {
    Generator<int, int> generator = outer();
    ASSERT_TRUE(generator.next());
    EXPECT_TRUE(generator.send(1));
    EXPECT_EQ(generator.current(), 1);
    EXPECT_THROW(generator.send(-1), std::invalid_argument);
    EXPECT_TRUE(generator.done());
}

TEST(Exercise8, OneLevelThatSwallowsItAndTheErrorIsGone) {
    Generator<int, int> generator = careless_outer();
    ASSERT_TRUE(generator.next());
    EXPECT_TRUE(generator.send(1));
    bool finished_quietly = false;
    EXPECT_NO_THROW(finished_quietly = !generator.send(-1));
    EXPECT_TRUE(finished_quietly);  // inner is done, so outer's loop ended: no error, no value
    EXPECT_TRUE(generator.done());
}

}  // namespace
}  // namespace sixways::generators
