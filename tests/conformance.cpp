// The conformance cases a full stage passes beyond the core (conformance_core.cpp): a deadline per
// request, every address tried in turn, the limits on requests in flight, and the options of the
// command line that only a full stage offers. Each starts its own lab server in-process on a free
// loopback port, so the server's counters (stats()) describe that case alone and can prove nothing
// was lost or made twice.
//
// Deadlines: fault cases use a timeout of a second or less; cases that must NOT end by a timeout use
// a generous one and check the result arrived before it, which is behaviour (the client did not sit
// out the deadline), not speed. No case asserts how fast anything is.
#include "tests/conformance.hpp"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "common/address.hpp"
#include "common/limits.hpp"
#include "common/url.hpp"
#include "lab/labserver.hpp"
#include "tests/conformance_support.hpp"
#include "tests/support/stage_support.hpp"

using namespace std::chrono_literals;
using sixways::Address;
using sixways::Duration;
using sixways::ErrorKind;
using sixways::Json;
using sixways::Options;
using sixways::Request;
using sixways::Result;
using sixways::lab::LabServer;
using namespace sixways::conformance;
using sixways::testing_support::most_in_flight;
using sixways::testing_support::on_loopback;
using sixways::testing_support::SilentServer;
using sixways::testing_support::with_timeout;

// ---- Every request gets its own response, exactly once, in order ----

TEST_P(Conformance, ReturnsEachPathsOwnBodyWithAConcurrencyOfFour) {
    const std::vector<Result> results = check_distinct_paths(GetParam(), 50, 4);
    EXPECT_LE(most_in_flight(results), 4u) << "more requests were in flight than --concurrency allows";
}

// ---- Large, chunked and capped bodies ----

TEST_P(Conformance, KeepsOnlyBodyCapBytesButCountsTheWholeBody) {
    LabServer server(on_loopback(0ms));
    server.start();
    Options options = with_timeout(5s);
    options.body_cap = 1000;
    const std::vector<Result> results =
        fetch(GetParam(), {request_for(server, "/bytes/100000"), request_for(server, "/chunked/100000")}, options);

    ASSERT_EQ(results.size(), 2u);
    for (const Result& result : results) {
        ASSERT_TRUE(result.ok()) << describe(result);
        EXPECT_EQ(result.response.body.size(), 1000u);
        EXPECT_EQ(result.response.body_bytes, 100'000u);
    }
}

TEST_P(Conformance, KeepsNoHeadersWhenAskedAndReadsTheBodyAllTheSame) {
    LabServer server(on_loopback(0ms));
    server.start();
    Options options = with_timeout(5s);
    options.keep_headers = false;
    const std::vector<Request> requests = {request_for(server, "/bytes/1000"),
                                           request_for(server, "/chunked/1000")};
    const std::vector<Result> results = fetch(GetParam(), requests, options);

    ASSERT_EQ(results.size(), 2u);
    for (const Result& result : results) {
        ASSERT_TRUE(result.ok()) << describe(result);
        EXPECT_EQ(result.response.status, 200);
        EXPECT_TRUE(result.response.headers.empty());
        EXPECT_EQ(result.response.body.size(), 1000u);
        EXPECT_EQ(result.response.body_bytes, 1000u);
    }
}

// ---- Every fault the lab server can play ----

namespace {

// Faults after which the response is still complete: the client must see that from the framing,
// not by waiting for the server to close (keep-open, no-body never close; trickle is merely slow).
const std::vector<std::string> complete_faults = {"trickle", "keep-open", "no-body"};

struct BrokenFault {
    std::string name;
    ErrorKind kind;
    std::string message_part;  // something the message must say about what failed
};

// A response cut short (reset, close, partial-headers, short-body) is a receive error, checked one
// fault at a time in the core suite (conformance_core.cpp); here it is mixed with good requests.
const std::vector<BrokenFault> cut_short_faults = {
    {"reset", ErrorKind::receive, ""},
    {"close", ErrorKind::receive, ""},
    {"partial-headers", ErrorKind::receive, ""},
    {"short-body", ErrorKind::receive, ""},
};

// The other broken responses: those that only a deadline ends, and those the client must refuse.
const std::vector<BrokenFault> broken_faults = {
    {"hang", ErrorKind::timeout, "waiting"},     // not one byte of the response arrived
    {"stall", ErrorKind::timeout, "receiving"},  // part of it did
    {"bad-status", ErrorKind::protocol, ""},
    {"big-headers", ErrorKind::protocol, ""},
    {"bad-chunk", ErrorKind::protocol, ""},
};

constexpr Duration fault_timeout = 500ms;

}  // namespace

TEST_P(Conformance, CompletesTrickleKeepOpenAndNoBodyWithoutWaitingForTheDeadline) {
    LabServer server(on_loopback(0ms));
    server.start();
    for (const std::string& fault : complete_faults) {
        SCOPED_TRACE("/fault/" + fault);
        const Options options = with_timeout(5s);
        const std::vector<Result> results = fetch(GetParam(), {request_for(server, "/fault/" + fault)}, options);
        ASSERT_EQ(results.size(), 1u);
        const Result& result = results[0];
        ASSERT_TRUE(result.ok()) << describe(result);
        EXPECT_LT(elapsed_ms(result), in_ms(options.timeout))
            << "the response was complete, yet the client waited for the deadline";
        if (fault == "no-body") {
            EXPECT_EQ(result.response.status, 204);
            EXPECT_EQ(result.response.body_bytes, 0u);
        } else {
            EXPECT_EQ(result.response.status, 200);
            EXPECT_GT(result.response.body_bytes, 0u);
        }
    }
}

TEST_P(Conformance, GivesAClearErrorOfTheRightKindForEveryOtherBrokenResponse) {
    LabServer server(on_loopback(0ms));
    server.start();
    for (const BrokenFault& fault : broken_faults) {
        SCOPED_TRACE("/fault/" + fault.name);
        const std::vector<Result> results =
            fetch(GetParam(), {request_for(server, "/fault/" + fault.name)}, with_timeout(fault_timeout));
        ASSERT_EQ(results.size(), 1u);
        const Result& result = results[0];
        ASSERT_FALSE(result.ok()) << "a broken response was taken for a good one: " << describe(result);
        EXPECT_STREQ(sixways::to_string(result.error), sixways::to_string(fault.kind)) << describe(result);
        EXPECT_FALSE(result.error_message.empty());
        if (fault.kind == ErrorKind::timeout) {
            EXPECT_EQ(result.error_message, sixways::timeout_message(fault_timeout, fault.message_part.c_str()));
        } else {
            EXPECT_LT(elapsed_ms(result), in_ms(fault_timeout))
                << "the error was clear at once, yet the client waited for the deadline";
        }
    }
    EXPECT_EQ(server.stats().requests, broken_faults.size());
}

TEST_P(Conformance, KeepsGoodRequestsGoodWhenMixedWithEveryFault) {
    LabServer server(on_loopback(5ms));
    server.start();
    // good, fault, good, fault, ..., good: a fault must not spill over onto its neighbours.
    // Trickle is left out: it takes about half a second by design, too close to this deadline.
    std::vector<std::string> paths = {"/fault/keep-open", "/fault/no-body", "/fault/folded-header"};
    std::vector<BrokenFault> every_broken_fault = cut_short_faults;
    every_broken_fault.insert(every_broken_fault.end(), broken_faults.begin(), broken_faults.end());
    for (const BrokenFault& fault : every_broken_fault) paths.push_back("/fault/" + fault.name);
    std::vector<std::string> mixed;
    for (std::size_t i = 0; i < paths.size(); ++i) {
        mixed.push_back("/good/" + std::to_string(i) + "/");  // the last '/': "/good/1/" is not in "/good/10/"
        mixed.push_back(paths[i]);
    }
    mixed.push_back("/good/last");
    std::vector<Request> requests;
    for (const std::string& path : mixed) requests.push_back(request_for(server, path));

    const std::vector<Result> results = fetch(GetParam(), requests, with_timeout(1s));

    ASSERT_EQ(results.size(), mixed.size());
    for (std::size_t i = 0; i < mixed.size(); ++i) {
        SCOPED_TRACE(mixed[i]);
        const Result& result = results[i];
        const auto broken = std::find_if(every_broken_fault.begin(), every_broken_fault.end(),
                                         [&](const BrokenFault& f) { return mixed[i] == "/fault/" + f.name; });
        if (broken != every_broken_fault.end()) {
            EXPECT_FALSE(result.ok()) << describe(result);
            EXPECT_STREQ(sixways::to_string(result.error), sixways::to_string(broken->kind));
            continue;
        }
        if (!result.ok()) {
            ADD_FAILURE() << describe(result);
            continue;
        }
        if (mixed[i].starts_with("/good/")) {
            EXPECT_EQ(result.response.status, 200);
            EXPECT_NE(result.response.body.find(mixed[i]), std::string::npos) << result.response.body;
        }
    }
}

TEST_P(Conformance, ReadsAFoldedHeaderAsOneValueJoinedBySpaces) {
    LabServer server(on_loopback(0ms));
    server.start();
    const std::vector<Result> results =
        fetch(GetParam(), {request_for(server, "/fault/folded-header")}, with_timeout(5s));

    ASSERT_EQ(results.size(), 1u);
    const Result& result = results[0];
    ASSERT_TRUE(result.ok()) << "RFC 9112 5.2: a user agent unfolds obs-fold, it does not refuse it: "
                             << describe(result);
    EXPECT_EQ(result.response.status, 200);
    ASSERT_NE(result.response.header("X-Folded"), nullptr);
    EXPECT_EQ(*result.response.header("X-Folded"), "first part second part third part");
    EXPECT_EQ(result.response.body, "path=/fault/folded-header id=1\n");
}

// ---- Connecting ----

TEST_P(Conformance, FailsARequestWithNoAddressAsAResolveErrorAndKeepsTheOthers) {
    LabServer server(on_loopback(0ms));
    server.start();
    Request unresolved = request_for(server, "/unresolved");
    unresolved.addresses.clear();
    const std::vector<Result> results =
        fetch(GetParam(), {unresolved, request_for(server, "/resolved")}, with_timeout(1s));

    ASSERT_EQ(results.size(), 2u);
    EXPECT_EQ(results[0].error, ErrorKind::resolve) << describe(results[0]);
    EXPECT_FALSE(results[0].error_message.empty());
    ASSERT_TRUE(results[1].ok()) << describe(results[1]);
    EXPECT_EQ(server.stats().accepted, 1u);
}

TEST_P(Conformance, TriesEachAddressInTurnUntilOneConnects) {
    LabServer server(on_loopback(0ms));
    server.start();
    const sixways::Url refusing = sixways::parse_url("http://127.0.0.1:" +
                                                     std::to_string(port_with_nothing_listening()) + "/");
    Request request = request_for(server, "/second-address");
    std::vector<Address> addresses = sixways::resolve(refusing);
    addresses.insert(addresses.end(), request.addresses.begin(), request.addresses.end());
    request.addresses = addresses;

    const std::vector<Result> results = fetch(GetParam(), {request}, with_timeout(1s));

    ASSERT_EQ(results.size(), 1u);
    ASSERT_TRUE(results[0].ok()) << describe(results[0]);
    EXPECT_NE(results[0].response.body.find("/second-address"), std::string::npos);
    EXPECT_EQ(server.stats().accepted, 1u);
}

TEST_P(Conformance, TriesTheNextAddressWhenNoSocketCanBeMadeForOne) {
    LabServer server(on_loopback(0ms));
    server.start();
    Request request = request_for(server, "/after-a-failed-socket");
    // An address of no family: socket() refuses it (EAFNOSUPPORT) before any connect is tried, as
    // it refuses an IPv6 address on a machine without IPv6.
    Address no_family = request.addresses.at(0);
    no_family.storage.ss_family = AF_UNSPEC;
    request.addresses.insert(request.addresses.begin(), no_family);

    const std::vector<Result> results = fetch(GetParam(), {request}, with_timeout(1s));

    ASSERT_EQ(results.size(), 1u);
    ASSERT_TRUE(results[0].ok()) << describe(results[0]);
    EXPECT_NE(results[0].response.body.find("/after-a-failed-socket"), std::string::npos);
    EXPECT_EQ(server.stats().accepted, 1u);
}

TEST_P(Conformance, WorksOverIPv6) {
    std::unique_ptr<LabServer> server;
    try {
        server = std::make_unique<LabServer>(on_loopback(0ms, {"::1"}));
    } catch (const std::exception& error) {
        GTEST_SKIP() << "no IPv6 loopback here: " << error.what();
    }
    server->start();
    const std::string url = server->url("/over-ipv6");
    ASSERT_TRUE(url.starts_with("http://[::1]:")) << url;
    const Request request = request_for(*server, "/over-ipv6");
    ASSERT_FALSE(request.addresses.empty());
    EXPECT_EQ(request.addresses[0].family(), AF_INET6);

    const std::vector<Result> results = fetch(GetParam(), {request}, with_timeout(5s));

    ASSERT_EQ(results.size(), 1u);
    ASSERT_TRUE(results[0].ok()) << describe(results[0]);
    EXPECT_EQ(results[0].response.status, 200);
    EXPECT_NE(results[0].response.body.find("/over-ipv6"), std::string::npos);
}

// ---- Status codes are responses ----

TEST_P(Conformance, TreatsErrorStatusesAsResponses) {
    LabServer server(on_loopback(0ms));
    server.start();
    const std::vector<Result> results =
        fetch(GetParam(), {request_for(server, "/status/404"), request_for(server, "/status/500")}, with_timeout(5s));

    ASSERT_EQ(results.size(), 2u);
    ASSERT_TRUE(results[0].ok()) << describe(results[0]);
    ASSERT_TRUE(results[1].ok()) << describe(results[1]);
    EXPECT_EQ(results[0].response.status, 404);
    EXPECT_EQ(results[1].response.status, 500);
}

TEST_P(Conformance, GivesNoContentAnEmptyBody) {
    LabServer server(on_loopback(0ms));
    server.start();
    const std::vector<Result> results = fetch(GetParam(), {request_for(server, "/status/204")}, with_timeout(5s));

    ASSERT_EQ(results.size(), 1u);
    ASSERT_TRUE(results[0].ok()) << describe(results[0]);
    EXPECT_EQ(results[0].response.status, 204);
    EXPECT_TRUE(results[0].response.body.empty());
    EXPECT_EQ(results[0].response.body_bytes, 0u);
}

TEST_P(Conformance, ReturnsARedirectWithoutFollowingIt) {
    LabServer server(on_loopback(0ms));
    server.start();
    const std::vector<Result> results = fetch(GetParam(), {request_for(server, "/redirect/3")}, with_timeout(5s));

    ASSERT_EQ(results.size(), 1u);
    ASSERT_TRUE(results[0].ok()) << describe(results[0]);
    EXPECT_EQ(results[0].response.status, 302);
    EXPECT_NE(results[0].response.header("Location"), nullptr);
    EXPECT_EQ(server.stats().requests, 1u) << "the redirect was followed";
}

// ---- The deadline is per request ----

TEST_P(Conformance, StartsEachDeadlineWhenTheRequestStartsNotWhenItWaitsForASlot) {
    LabServer server(on_loopback(0ms));
    server.start();
    // Six requests of 300 ms, two at a time (one at a time for a blocking stage): the batch takes
    // 0.9 s or more, longer than a deadline of 1 s allows for the last requests if their clocks
    // started with the batch. Each request alone needs 300 ms.
    std::vector<Request> requests;
    for (int i = 0; i < 6; ++i) requests.push_back(request_for(server, "/delay/300"));

    const std::vector<Result> results = fetch(GetParam(), requests, with_timeout(1s, 2));

    ASSERT_EQ(results.size(), requests.size());
    for (const Result& result : results) EXPECT_TRUE(result.ok()) << describe(result);
}

TEST_P(Conformance, KeepsTheLargestTimeoutTheCommandLineAcceptsWithoutOverflowing) {
    LabServer server(on_loopback(50ms));
    server.start();
    // About 292 years: start + timeout does not fit in the clock's 64 bits of nanoseconds. Added
    // as it is, it wraps round to a deadline in the past, and every request times out at once.
    const Duration largest = sixways::parse_duration("9223372036");
    const std::vector<Result> results =
        fetch(GetParam(), {request_for(server, "/first"), request_for(server, "/second")}, with_timeout(largest));

    ASSERT_EQ(results.size(), 2u);
    for (const Result& result : results) {
        ASSERT_TRUE(result.ok()) << describe(result);
        EXPECT_EQ(result.response.status, 200);
    }
}

// ---- The command line ----

// The core suite checks the usage of the options every binary takes; a full stage offers these too.
TEST_P(Conformance, CommandLineHelpOffersConcurrencyAndTimeout) {
    if (GetParam().binary.empty()) GTEST_SKIP() << GetParam().name << " has no binary to run";
    const auto output = run_cli(GetParam(), {"--help"});
    EXPECT_EQ(output.exit_status, 0) << output.err;
    const std::string synopsis = output.out.substr(0, output.out.find('\n'));
    for (const char* option : {"[--concurrency C]", "[--timeout DURATION]"}) {
        EXPECT_NE(synopsis.find(option), std::string::npos) << "usage does not offer " << option << ":\n"
                                                            << output.out;
    }
}

// ---- The command line in a hostile world: a closed stream, few descriptors, little memory ----

namespace {

// The smallest address space, in MiB, in which the binary can be loaded at all (its code and
// libraries): the smallest cap under which `binary --help` succeeds. Caps in the tests count from
// there, so that they mean the same on a machine whose libraries are larger.
long smallest_address_space_mib(const std::string& binary) {
    for (long mib = 2; mib <= 256; ++mib) {
        const auto output = run_program(
            "/usr/bin/prlimit", {"--as=" + std::to_string(mib << 20), "--", binary, "--help"}, 20s);
        if (output.exit_status == 0) return mib;
    }
    return -1;
}

}  // namespace

// With stdout closed, the first socket got number 1: after Ctrl-C, the partial report (printed to
// stdout) went to the server on the request's connection. The server must get the request only.
TEST_P(Conformance, CommandLineInterruptedWithStdoutClosedSendsTheServerOnlyItsRequest) {
    if (GetParam().binary.empty()) GTEST_SKIP() << GetParam().name << " has no binary to run";
    SilentServer server;
    std::string received;
    std::string problem;
    std::thread peer;
    ChildStreams streams;
    streams.close_stdout = true;
    // The server's side, on a thread of its own: the whole request, then Ctrl-C, then whatever
    // else comes until the program has exited and its socket is closed.
    streams.started = [&](pid_t pid) {
        peer = std::thread([&, pid] {
            try {
                const int fd = server.accept();
                char buffer[4096];
                bool interrupted = false;
                for (;;) {
                    pollfd entry{fd, POLLIN, 0};
                    if (::poll(&entry, 1, 10'000) != 1) break;
                    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
                    if (n <= 0) break;
                    received.append(buffer, static_cast<std::size_t>(n));
                    if (!interrupted && received.find("\r\n\r\n") != std::string::npos) {
                        ::kill(pid, SIGINT);
                        interrupted = true;
                    }
                }
                ::close(fd);
            } catch (const std::exception& error) {
                problem = error.what();
                ::kill(pid, SIGINT);
            }
        });
    };
    const auto output = run_program(
        GetParam().binary, {"1", "--url", server.url(), "--timeout", "20"}, 30s, streams);
    peer.join();
    EXPECT_EQ(problem, "");
    EXPECT_EQ(output.exit_status, 130) << output.err;
    const auto end_of_request = received.find("\r\n\r\n");
    ASSERT_NE(end_of_request, std::string::npos) << received;
    EXPECT_EQ(received.substr(end_of_request + 4), "") << "sent to the server after the request";
}

// Under `ulimit -n 64`, 300 requests at once would find a descriptor for only about 60 of them. The
// command line keeps the requests in flight within the limit instead, says so once, and every
// request gets through. Stage 01 has one request in flight and needs no such line.
TEST_P(Conformance, CommandLineKeepsRequestsInFlightWithinTheDescriptorLimit) {
    if (GetParam().binary.empty()) GTEST_SKIP() << GetParam().name << " has no binary to run";
    if (!has_prlimit()) GTEST_SKIP() << "needs /usr/bin/prlimit (util-linux)";
    sixways::raise_open_file_limit();  // the lab server in this process holds the other ends
    LabServer server(on_loopback(100ms));
    server.start();
    const int count = GetParam().one_at_a_time ? 20 : 300;
    const auto output = run_program(
        "/usr/bin/prlimit",
        {"--nofile=64", "--", GetParam().binary, std::to_string(count), "--url", server.url("/"),
         "--json"},
        60s);
    ASSERT_FALSE(output.killed);
    EXPECT_EQ(output.exit_status, 0) << output.err;
    const Json report = json_report(output);
    EXPECT_EQ(number_in(report, "ok"), count) << output.out;
    EXPECT_LE(number_in(report, "concurrency"), 64) << output.out;
    const std::size_t lines = occurrences(output.err, " requests in flight: the descriptor limit is 64\n");
    EXPECT_EQ(lines, GetParam().one_at_a_time ? 0u : 1u) << output.err;
    EXPECT_EQ(occurrences(output.err, "\n"), lines) << "nothing else on stderr: " << output.err;
}

// Capped at a small address space (`ulimit -v`), a run must still end with its report: every
// request either got its response or failed with `limit` ("out of memory"); no abort, no internal
// error, and no "Task was destroyed but it is pending!" for each task left behind. The caps count
// up in steps of 1 MiB from the least the binary needs to be loaded at all: the smallest leave room
// for no request, the largest for some or all. A stage need not keep the other requests going when
// memory runs out for one: the command line fails every request without a result (common/cli.cpp).
TEST_P(Conformance, CommandLineReportsEveryRequestWhenAddressSpaceIsScarce) {
#ifdef SIXWAYS_SANITIZE_SHADOW_MEMORY
    GTEST_SKIP() << "a sanitizer's shadow memory does not fit under a cap on address space";
#endif
    if (GetParam().binary.empty()) GTEST_SKIP() << GetParam().name << " has no binary to run";
    if (!has_prlimit()) GTEST_SKIP() << "needs /usr/bin/prlimit (util-linux)";
    const int count = GetParam().one_at_a_time ? 3 : 5000;
    // The lab server, in this process, holds the other end of every connection.
    if (sixways::raise_open_file_limit() < 2 * count + 500) GTEST_SKIP() << "needs more descriptors";
    const long smallest = smallest_address_space_mib(GetParam().binary);
    ASSERT_GT(smallest, 0) << GetParam().binary << " --help does not run under any cap";
    LabServer server(on_loopback(100ms));
    server.start();
    for (long more = 2; more <= 11; ++more) {
        const long cap = (smallest + more) << 20;
        SCOPED_TRACE("--as=" + std::to_string(cap) + " (" + std::to_string(smallest + more) + " MiB)");
        const auto output = run_program(
            "/usr/bin/prlimit",
            {"--as=" + std::to_string(cap), "--", GetParam().binary, std::to_string(count), "--url",
             server.url("/"), "--json"},
            60s);
        ASSERT_FALSE(output.killed);
        EXPECT_TRUE(output.exit_status == 0 || output.exit_status == 1)
            << "exit status " << output.exit_status << ": " << output.err;
        const Json report = json_report(output);
        EXPECT_EQ(number_in(report, "ok") + number_in(report, "failed"), count) << output.out;
        const Json* errors = report.find("errors");
        ASSERT_NE(errors, nullptr) << output.out;
        for (const std::string& kind : errors->keys) {
            EXPECT_EQ(kind, "limit") << output.out;
        }
        EXPECT_EQ(output.err.find("Task was destroyed"), std::string::npos) << output.err;
        EXPECT_EQ(output.err.find("terminate"), std::string::npos) << output.err;
        EXPECT_EQ(output.err.find("internal error"), std::string::npos) << output.err;
    }
}

