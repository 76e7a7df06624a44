// The conformance cases. Each starts its own lab server in-process on a free loopback port, so the
// server's counters (stats()) describe that case alone and can prove nothing was lost or made twice.
//
// Deadlines: fault cases use a timeout of a second or less; cases that must NOT end by a timeout use
// a generous one and check the result arrived before it, which is behaviour (the client did not sit
// out the deadline), not speed. No case asserts how fast anything is.
#include "tests/conformance.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <thread>

#include "common/address.hpp"
#include "common/json_reader.hpp"
#include "common/limits.hpp"
#include "common/url.hpp"
#include "lab/labserver.hpp"
#include "tests/child_process.hpp"
#include "tests/support/stage_support.hpp"

using namespace std::chrono_literals;
using sixways::Address;
using sixways::Clock;
using sixways::Duration;
using sixways::ErrorKind;
using sixways::Options;
using sixways::Request;
using sixways::Result;
using sixways::Json;
using sixways::lab::LabServer;
using namespace sixways::testing_support;

namespace {

// ---- The lab server and the requests ----

// on_loopback, with_timeout and most_in_flight come from tests/support/stage_support.hpp, as does
// the request_for that takes a whole URL.
Request request_for(const LabServer& server, const std::string& path) {
    return sixways::testing_support::request_for(server.url(path));
}

std::uint64_t count_of(const std::map<std::string, std::uint64_t>& counts, const std::string& key) {
    const auto found = counts.find(key);
    return found == counts.end() ? 0 : found->second;
}

// For failure messages: "200, 10000 body bytes" or "receive: connection closed after ...".
std::string describe(const Result& result) {
    if (!result.ok()) return std::string(sixways::to_string(result.error)) + " error: " + result.error_message;
    return std::to_string(result.response.status) + ", " + std::to_string(result.response.body_bytes) +
           " body bytes";
}

// A loopback port with nothing listening: bound to find a free one, then closed again.
std::uint16_t port_with_nothing_listening() {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw std::runtime_error("socket failed");
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = 0;
    socklen_t length = sizeof address;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
        ::close(fd);
        throw std::runtime_error("bind to a free port failed");
    }
    ::close(fd);
    return ntohs(address.sin_port);
}

// The whole connection's bytes for one GET, read with a plain socket until the server closes it.
// The suite's independent view of what the lab server sends; also a sentinel: once it has been
// answered, every connection made before it has been accepted (one listening socket accepts in
// order), so stats() can be trusted to show them.
std::string raw_get(const LabServer& server, const std::string& path) {
    const Request request = request_for(server, path);
    const Address& address = request.addresses.at(0);
    const int fd = ::socket(address.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw std::runtime_error("socket failed");
    std::string bytes;
    if (::connect(fd, address.get(), address.length) == 0) {
        const std::string wire = sixways::build_get_request(request.url);
        if (::send(fd, wire.data(), wire.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(wire.size())) {
            char buffer[64 * 1024];
            pollfd entry{fd, POLLIN, 0};
            while (::poll(&entry, 1, 10'000) > 0) {
                const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
                if (n <= 0) break;
                bytes.append(buffer, static_cast<std::size_t>(n));
            }
        }
    }
    ::close(fd);
    return bytes;
}

std::string body_of(const std::string& raw_response) {
    const auto end_of_head = raw_response.find("\r\n\r\n");
    return end_of_head == std::string::npos ? std::string() : raw_response.substr(end_of_head + 4);
}

// A lab body's first line echoes the request ("path=/bytes/10 id=7"), so it differs between two
// fetches of one path; the text after it is the same every time.
std::string_view first_line(std::string_view body) { return body.substr(0, body.find('\n')); }
std::string_view after_first_line(std::string_view body) {
    const auto end = body.find('\n');
    return end == std::string_view::npos ? std::string_view() : body.substr(end + 1);
}

// Compares two large bodies without printing megabytes: "" when equal, else where they differ.
std::string first_difference(std::string_view got, std::string_view expected) {
    if (got == expected) return "";
    const auto mismatch = std::mismatch(got.begin(), got.end(), expected.begin(), expected.end());
    return "sizes " + std::to_string(got.size()) + " and " + std::to_string(expected.size()) +
           ", first difference at byte " + std::to_string(mismatch.first - got.begin());
}

// No case's fetch_all should take more than a few seconds, even under a sanitizer.
constexpr Duration hang_bound = 60s;

// Calls the stage's fetch_all under a watchdog.
std::vector<Result> fetch(const StageUnderTest& stage, const std::vector<Request>& requests, const Options& options) {
    const sixways::testing_support::Watchdog watchdog(stage.name + "'s fetch_all", hang_bound);
    return stage.fetch_all(requests, options);
}

// For checks that a result came before its deadline; in milliseconds so a failure reads well.
double elapsed_ms(const Result& result) {
    return std::chrono::duration<double, std::milli>(result.timing.done - result.timing.start).count();
}

double in_ms(Duration duration) { return std::chrono::duration<double, std::milli>(duration).count(); }

// ---- Helpers for the command-line cases ----

sixways::conformance::ChildOutput run_cli(const StageUnderTest& stage, const std::vector<std::string>& args) {
    return sixways::conformance::run_program(stage.binary, args, 20s);
}

// "3 --url http://..." for failure messages.
std::string joined(const std::vector<std::string>& args) {
    std::string text;
    for (const std::string& arg : args) text += (text.empty() ? "" : " ") + arg;
    return text;
}

// Parses stdout as exactly one JSON object; records a failure and returns a null Json if it is not.
Json json_report(const sixways::conformance::ChildOutput& output) {
    try {
        Json report = sixways::parse_json(output.out);
        EXPECT_EQ(report.type, Json::Type::object) << "stdout: " << output.out;
        return report;
    } catch (const sixways::JsonError& error) {
        ADD_FAILURE() << "stdout is not one JSON object (" << error.what() << "): " << output.out;
        return Json();
    }
}

double number_in(const Json& object, const std::string& key) {
    const Json* value = object.find(key);
    if (value == nullptr || value->type != Json::Type::number) {
        ADD_FAILURE() << "the report has no number \"" << key << "\"";
        return -1;
    }
    return value->number;
}

}  // namespace

// ---- Every request gets its own response, exactly once, in order ----

namespace {

// Fetches /distinct/K?x=K for K < count and checks everything a mix-up, a loss or a duplicate
// would break. Returns the results for further checks.
std::vector<Result> check_distinct_paths(const StageUnderTest& stage, std::size_t count, std::size_t concurrency) {
    LabServer server(on_loopback(10ms));
    server.start();
    std::vector<std::string> targets;
    std::vector<Request> requests;
    for (std::size_t k = 0; k < count; ++k) {
        targets.push_back("/distinct/" + std::to_string(k) + "?x=" + std::to_string(k));
        requests.push_back(request_for(server, targets.back()));
    }

    // on_result may be called from several threads at once (stage 02): count under a lock.
    std::mutex mutex;
    std::vector<int> calls(count, 0);
    std::vector<std::string> bodies_reported(count);
    Options options = with_timeout(5s, concurrency);
    options.on_result = [&](std::size_t index, const Result& result) {
        std::lock_guard lock(mutex);
        if (index >= count) {
            ADD_FAILURE() << "on_result called with index " << index << " of " << count << " requests";
            return;
        }
        ++calls[index];
        bodies_reported[index] = result.response.body;
    };

    std::vector<Result> results = fetch(stage, requests, options);

    EXPECT_EQ(results.size(), count) << "exactly one result per request";
    std::set<std::string> request_ids;
    for (std::size_t i = 0; i < std::min(count, results.size()); ++i) {
        const Result& result = results[i];
        SCOPED_TRACE("request " + std::to_string(i) + ": " + targets[i]);
        EXPECT_EQ(calls[i], 1) << "on_result must be called exactly once for each request";
        if (!result.ok()) {
            ADD_FAILURE() << describe(result);
            continue;
        }
        EXPECT_EQ(result.response.status, 200);
        EXPECT_NE(result.response.body.find(targets[i]), std::string::npos)
            << "the body does not echo this request's own path: " << result.response.body;
        for (std::size_t j = 0; j < count; ++j) {
            if (j != i && result.response.body.find(targets[j]) != std::string::npos) {
                ADD_FAILURE() << "the body echoes another request's path " << targets[j] << ": "
                              << result.response.body;
            }
        }
        EXPECT_EQ(bodies_reported[i], result.response.body) << "on_result saw a different result";
        EXPECT_TRUE(result.timing.done > result.timing.start) << "timing.start and timing.done must be set";
        const std::string* id = result.response.header("X-Request-Id");
        if (id == nullptr) {
            ADD_FAILURE() << "no X-Request-Id header";
            continue;
        }
        EXPECT_TRUE(request_ids.insert(*id).second) << "X-Request-Id " << *id << " came back twice";
    }

    const sixways::lab::LabStats stats = server.stats();
    EXPECT_EQ(stats.requests, count) << "the lab server saw a request lost or made twice";
    EXPECT_EQ(stats.accepted, count) << "one connection per request";
    for (const std::string& target : targets) {
        EXPECT_EQ(count_of(stats.requests_by_path, target), 1u) << target << " reached the server";
    }
    return results;
}

}  // namespace

TEST_P(Conformance, ReturnsEachPathsOwnBodyWithAllRequestsInFlight) {
    check_distinct_paths(GetParam(), 50, 0);
}

TEST_P(Conformance, ReturnsEachPathsOwnBodyWithAConcurrencyOfFour) {
    const std::vector<Result> results = check_distinct_paths(GetParam(), 50, 4);
    EXPECT_LE(most_in_flight(results), 4u) << "more requests were in flight than --concurrency allows";
}

TEST_P(Conformance, ReturnsNoResultsAndMakesNoConnectionForNoRequests) {
    LabServer server(on_loopback(0ms));
    server.start();
    int calls = 0;
    Options options = with_timeout(1s);
    options.on_result = [&](std::size_t, const Result&) { ++calls; };
    EXPECT_TRUE(fetch(GetParam(), {}, options).empty());
    EXPECT_EQ(calls, 0);
    EXPECT_EQ(server.stats().accepted, 0u);
}

// ---- Large, chunked and capped bodies ----

TEST_P(Conformance, ReceivesATenMegabyteBodyComplete) {
    LabServer server(on_loopback(0ms));
    server.start();
    const std::string path = "/bytes/10000000";
    Options options = with_timeout(10s);
    options.body_cap = 16 * 1024 * 1024;
    const std::vector<Result> results = fetch(GetParam(), {request_for(server, path)}, options);

    ASSERT_EQ(results.size(), 1u);
    const Result& result = results[0];
    ASSERT_TRUE(result.ok()) << describe(result);
    EXPECT_EQ(result.response.status, 200);
    EXPECT_EQ(result.response.body_bytes, 10'000'000u);
    EXPECT_EQ(result.response.body.size(), 10'000'000u);
    EXPECT_NE(first_line(result.response.body).find(path), std::string::npos)
        << "the body does not start by echoing " << path;
    const std::string expected = body_of(raw_get(server, path));
    ASSERT_EQ(expected.size(), 10'000'000u) << "the suite's own read of " << path << " is incomplete";
    EXPECT_EQ(first_difference(after_first_line(result.response.body), after_first_line(expected)), "")
        << "the body differs from what the lab server sends";
}

TEST_P(Conformance, DecodesChunkedBodiesOfAnySize) {
    LabServer server(on_loopback(0ms));
    server.start();
    const std::vector<std::size_t> sizes = {0, 1, 100'000};
    std::vector<Request> requests;
    for (std::size_t size : sizes) requests.push_back(request_for(server, "/chunked/" + std::to_string(size)));
    const std::vector<Result> results = fetch(GetParam(), requests, with_timeout(5s));

    ASSERT_EQ(results.size(), sizes.size());
    for (std::size_t i = 0; i < sizes.size(); ++i) {
        SCOPED_TRACE("/chunked/" + std::to_string(sizes[i]));
        ASSERT_TRUE(results[i].ok()) << describe(results[i]);
        EXPECT_EQ(results[i].response.status, 200);
        EXPECT_EQ(results[i].response.body_bytes, sizes[i]);
        EXPECT_EQ(results[i].response.body.size(), sizes[i]);
    }
    // The lab server cuts /chunked/N and /bytes/N from the same text, after the echo line. Read
    // with Content-Length framing by the suite itself, /bytes/N tells what the chunks must decode to.
    const std::string& chunked = results.back().response.body;
    const std::string plain = body_of(raw_get(server, "/bytes/200000"));
    const std::string_view expected = after_first_line(plain).substr(0, after_first_line(chunked).size());
    EXPECT_EQ(first_difference(after_first_line(chunked), expected), "")
        << "the decoded chunks differ from the text the lab server framed into them";
}

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

const std::vector<BrokenFault> broken_faults = {
    {"reset", ErrorKind::receive, ""},
    {"close", ErrorKind::receive, ""},
    {"partial-headers", ErrorKind::receive, ""},
    {"short-body", ErrorKind::receive, ""},
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

TEST_P(Conformance, GivesAClearErrorOfTheRightKindForEveryBrokenResponse) {
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
    for (const BrokenFault& fault : broken_faults) paths.push_back("/fault/" + fault.name);
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
        const auto broken = std::find_if(broken_faults.begin(), broken_faults.end(), [&](const BrokenFault& f) {
            return mixed[i] == "/fault/" + f.name;
        });
        if (broken != broken_faults.end()) {
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

TEST_P(Conformance, ReportsARefusedConnectionAsAConnectError) {
    const std::uint16_t port = port_with_nothing_listening();
    const sixways::Url url = sixways::parse_url("http://127.0.0.1:" + std::to_string(port) + "/");
    const std::vector<Result> results = fetch(GetParam(), {Request{url, sixways::resolve(url)}}, with_timeout(1s));

    ASSERT_EQ(results.size(), 1u);
    EXPECT_EQ(results[0].error, ErrorKind::connect) << describe(results[0]);
    EXPECT_NE(results[0].error_message.find("refused"), std::string::npos) << results[0].error_message;
}

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

TEST_P(Conformance, CommandLineRejectsBadUrlsWithoutSendingAnything) {
    if (GetParam().binary.empty()) GTEST_SKIP() << GetParam().name << " has no binary to run";
    LabServer server(on_loopback(0ms));
    server.start();
    const std::string here = "127.0.0.1:" + std::to_string(server.port());
    const std::vector<std::string> bad_urls = {
        "https://x/", "http://", "http://h:99999/", "http://a b/",
        // the same mistakes, aimed at the lab server, which must see no connection
        "https://" + here + "/", "http://" + here + "/a b", "http://127.0.0.1:99999/"};
    for (const std::string& url : bad_urls) {
        const std::vector<std::string> args = {"3", "--url", url};
        SCOPED_TRACE(joined(args));
        const auto output = run_cli(GetParam(), args);
        EXPECT_EQ(output.exit_status, 2) << output.err;
        EXPECT_FALSE(output.err.empty()) << "the message saying what is wrong belongs on stderr";
        EXPECT_EQ(output.out, "") << "nothing on stdout for bad usage";
    }
    raw_get(server, "/sentinel");
    EXPECT_EQ(server.stats().accepted, 1u) << "a bad URL made a connection";
}

TEST_P(Conformance, CommandLineRejectsBadRequestCounts) {
    if (GetParam().binary.empty()) GTEST_SKIP() << GetParam().name << " has no binary to run";
    LabServer server(on_loopback(0ms));
    server.start();
    for (const char* count : {"-3", "abc", "99999999999999999999999"}) {
        const std::vector<std::string> args = {count, "--url", server.url("/")};
        SCOPED_TRACE(joined(args));
        const auto output = run_cli(GetParam(), args);
        EXPECT_EQ(output.exit_status, 2) << output.err;
        EXPECT_FALSE(output.err.empty());
        EXPECT_EQ(output.out, "");
    }
    raw_get(server, "/sentinel");
    EXPECT_EQ(server.stats().accepted, 1u) << "a bad request count made a connection";
}

TEST_P(Conformance, CommandLineHelpPrintsUsageOnStdout) {
    if (GetParam().binary.empty()) GTEST_SKIP() << GetParam().name << " has no binary to run";
    const auto output = run_cli(GetParam(), {"--help"});
    EXPECT_EQ(output.exit_status, 0) << output.err;
    for (const char* option : {"--url", "--concurrency", "--timeout", "--json"}) {
        EXPECT_NE(output.out.find(option), std::string::npos) << "usage does not mention " << option << ":\n"
                                                              << output.out;
    }
}

TEST_P(Conformance, CommandLineWithZeroRequestsMakesNoConnection) {
    if (GetParam().binary.empty()) GTEST_SKIP() << GetParam().name << " has no binary to run";
    LabServer server(on_loopback(0ms));
    server.start();
    const auto output = run_cli(GetParam(), {"0", "--url", server.url("/"), "--json"});
    EXPECT_EQ(output.exit_status, 0) << output.err;
    const Json report = json_report(output);
    EXPECT_EQ(number_in(report, "requests"), 0);
    EXPECT_EQ(number_in(report, "ok"), 0);
    raw_get(server, "/sentinel");
    EXPECT_EQ(server.stats().accepted, 1u) << "N=0 made a connection";
}

TEST_P(Conformance, CommandLinePrintsOneLineReport) {
    if (GetParam().binary.empty()) GTEST_SKIP() << GetParam().name << " has no binary to run";
    LabServer server(on_loopback(0ms));
    server.start();
    const auto output = run_cli(GetParam(), {"5", "--url", server.url("/")});
    EXPECT_EQ(output.exit_status, 0) << output.err;
    EXPECT_TRUE(output.out.starts_with(GetParam().name + ": ")) << output.out;
    EXPECT_EQ(std::count(output.out.begin(), output.out.end(), '\n'), 1) << output.out;
    EXPECT_TRUE(output.out.ends_with("\n")) << output.out;
}

TEST_P(Conformance, CommandLineJsonReportIsOneObjectWithEveryKey) {
    if (GetParam().binary.empty()) GTEST_SKIP() << GetParam().name << " has no binary to run";
    LabServer server(on_loopback(5ms));
    server.start();
    const std::string url = server.url("/cli");
    const auto output = run_cli(GetParam(), {"20", "--url", url, "--json"});
    EXPECT_EQ(output.exit_status, 0) << output.err;
    const Json report = json_report(output);

    for (const char* key : {"stage", "url", "requests", "ok", "failed", "bytes", "wall_s", "cpu_s", "max_rss_kb",
                            "concurrency", "latency_ms", "errors"}) {
        EXPECT_NE(report.find(key), nullptr) << "no \"" << key << "\" in " << output.out;
    }
    const Json* stage = report.find("stage");
    ASSERT_NE(stage, nullptr);
    EXPECT_EQ(stage->string, GetParam().name);
    EXPECT_EQ(number_in(report, "requests"), 20);
    EXPECT_EQ(number_in(report, "ok"), 20);
    EXPECT_EQ(number_in(report, "failed"), 0);
    EXPECT_GT(number_in(report, "bytes"), 0);
    EXPECT_GE(number_in(report, "concurrency"), 1);
    EXPECT_LE(number_in(report, "concurrency"), 20);
    const Json* latency = report.find("latency_ms");
    ASSERT_NE(latency, nullptr);
    EXPECT_LE(number_in(*latency, "p50"), number_in(*latency, "p99"));
    EXPECT_LE(number_in(*latency, "p99"), number_in(*latency, "max"));
    const Json* errors = report.find("errors");
    ASSERT_NE(errors, nullptr);
    EXPECT_EQ(errors->type, Json::Type::object);
    EXPECT_TRUE(errors->keys.empty()) << output.out;

    EXPECT_EQ(server.stats().requests, 20u);
    EXPECT_EQ(count_of(server.stats().requests_by_path, "/cli"), 20u);
}

TEST_P(Conformance, CommandLineExitsOneAndCountsConnectErrorsWhenRefused) {
    if (GetParam().binary.empty()) GTEST_SKIP() << GetParam().name << " has no binary to run";
    const std::string url = "http://127.0.0.1:" + std::to_string(port_with_nothing_listening()) + "/";
    const auto output = run_cli(GetParam(), {"3", "--url", url, "--timeout", "1s", "--json"});
    EXPECT_EQ(output.exit_status, 1) << output.err;
    const Json report = json_report(output);
    EXPECT_EQ(number_in(report, "ok"), 0);
    EXPECT_EQ(number_in(report, "failed"), 3);
    const Json* errors = report.find("errors");
    ASSERT_NE(errors, nullptr);
    EXPECT_EQ(number_in(*errors, "connect"), 3) << output.out;
    EXPECT_NE(output.err.find("refused"), std::string::npos) << "stderr counts each error message: " << output.err;
}

// ---- The command line in a hostile world: closed streams, few descriptors, little memory ----

namespace {

std::string contents_of(const std::string& path) {
    std::ifstream file(path, std::ios::binary);
    std::stringstream text;
    text << file.rdbuf();
    return text.str();
}

bool has_prlimit() { return ::access("/usr/bin/prlimit", X_OK) == 0; }

// How many times `part` occurs in `text`.
std::size_t occurrences(const std::string& text, const std::string& part) {
    std::size_t count = 0;
    for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size())) {
        ++count;
    }
    return count;
}

// The smallest address space, in MiB, in which the binary can be loaded at all (its code and
// libraries): the smallest cap under which `binary --help` succeeds. Caps in the tests count from
// there, so that they mean the same on a machine whose libraries are larger.
long smallest_address_space_mib(const std::string& binary) {
    for (long mib = 2; mib <= 256; ++mib) {
        const auto output = sixways::conformance::run_program(
            "/usr/bin/prlimit", {"--as=" + std::to_string(mib << 20), "--", binary, "--help"}, 20s);
        if (output.exit_status == 0) return mib;
    }
    return -1;
}

}  // namespace

// Started with stdout closed (`stage ... >&-`), the first file the program opens would get number 1
// and become its stdout: the trace file, here, with the report written into the middle of its JSON.
TEST_P(Conformance, CommandLineWithStdoutClosedKeepsTheTraceFileJson) {
    if (GetParam().binary.empty()) GTEST_SKIP() << GetParam().name << " has no binary to run";
    LabServer server(on_loopback(0ms));
    server.start();
    const std::string trace = ::testing::TempDir() + GetParam().name + "_stdout_closed.json";
    sixways::conformance::ChildStreams streams;
    streams.close_stdout = true;
    const auto output = sixways::conformance::run_program(
        GetParam().binary, {"3", "--url", server.url("/"), "--trace", trace}, 20s, streams);
    EXPECT_EQ(output.exit_status, 0) << output.err;
    const std::string text = contents_of(trace);
    EXPECT_NO_THROW(sixways::parse_json(text)) << text;
    EXPECT_EQ(text.find(", 3 ok, 0 failed, "), std::string::npos)
        << "the report went into the trace: " << text;
    std::remove(trace.c_str());
}

// The same with stderr closed: the trace file gets number 2, where the count of each error message
// goes.
TEST_P(Conformance, CommandLineWithStderrClosedKeepsTheTraceFileJson) {
    if (GetParam().binary.empty()) GTEST_SKIP() << GetParam().name << " has no binary to run";
    const std::string url = "http://127.0.0.1:" + std::to_string(port_with_nothing_listening()) + "/";
    const std::string trace = ::testing::TempDir() + GetParam().name + "_stderr_closed.json";
    sixways::conformance::ChildStreams streams;
    streams.close_stderr = true;
    const auto output = sixways::conformance::run_program(
        GetParam().binary, {"3", "--url", url, "--timeout", "1s", "--trace", trace}, 20s, streams);
    EXPECT_EQ(output.exit_status, 1) << "three refused connections";
    EXPECT_TRUE(output.out.starts_with(GetParam().name + ": 3 requests")) << output.out;
    const std::string text = contents_of(trace);
    EXPECT_NO_THROW(sixways::parse_json(text)) << text;
    EXPECT_EQ(text.find("3 x connect"), std::string::npos) << "stderr went into the trace: " << text;
    std::remove(trace.c_str());
}

// And with all three closed, a run goes as usual.
TEST_P(Conformance, CommandLineWithEveryStandardStreamClosedFetchesAndTraces) {
    if (GetParam().binary.empty()) GTEST_SKIP() << GetParam().name << " has no binary to run";
    LabServer server(on_loopback(0ms));
    server.start();
    const std::string trace = ::testing::TempDir() + GetParam().name + "_streams_closed.json";
    sixways::conformance::ChildStreams streams;
    streams.close_stdin = streams.close_stdout = streams.close_stderr = true;
    const auto output = sixways::conformance::run_program(
        GetParam().binary, {"3", "--url", server.url("/"), "--trace", trace}, 20s, streams);
    EXPECT_EQ(output.exit_status, 0);
    const std::string text = contents_of(trace);
    EXPECT_NO_THROW(sixways::parse_json(text)) << text;
    raw_get(server, "/sentinel");
    EXPECT_EQ(server.stats().requests, 4u) << "three requests and the sentinel, nothing else";
    std::remove(trace.c_str());
}

// With stdout closed, the first socket got number 1: after Ctrl-C, the partial report (printed to
// stdout) went to the server on the request's connection. The server must get the request only.
TEST_P(Conformance, CommandLineInterruptedWithStdoutClosedSendsTheServerOnlyItsRequest) {
    if (GetParam().binary.empty()) GTEST_SKIP() << GetParam().name << " has no binary to run";
    SilentServer server;
    std::string received;
    std::string problem;
    std::thread peer;
    sixways::conformance::ChildStreams streams;
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
    const auto output = sixways::conformance::run_program(
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
    const auto output = sixways::conformance::run_program(
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
// for no request, and somewhere on the way memory runs out for some requests only. Those fail, and
// the others get through: memory runs out for a request, not for the whole run.
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
    int some_through = 0;  // caps under which some requests got through and the others failed
    for (long more = 2; more <= 11; ++more) {
        const long cap = (smallest + more) << 20;
        SCOPED_TRACE("--as=" + std::to_string(cap) + " (" + std::to_string(smallest + more) + " MiB)");
        const auto output = sixways::conformance::run_program(
            "/usr/bin/prlimit",
            {"--as=" + std::to_string(cap), "--", GetParam().binary, std::to_string(count), "--url",
             server.url("/"), "--json"},
            60s);
        ASSERT_FALSE(output.killed);
        EXPECT_TRUE(output.exit_status == 0 || output.exit_status == 1)
            << "exit status " << output.exit_status << ": " << output.err;
        const Json report = json_report(output);
        const double ok = number_in(report, "ok");
        EXPECT_EQ(ok + number_in(report, "failed"), count) << output.out;
        const Json* errors = report.find("errors");
        ASSERT_NE(errors, nullptr) << output.out;
        for (const std::string& kind : errors->keys) {
            EXPECT_EQ(kind, "limit") << output.out;
        }
        EXPECT_EQ(output.err.find("Task was destroyed"), std::string::npos) << output.err;
        EXPECT_EQ(output.err.find("terminate"), std::string::npos) << output.err;
        EXPECT_EQ(output.err.find("internal error"), std::string::npos) << output.err;
        some_through += ok > 0 && ok < count ? 1 : 0;
    }
    if (!GetParam().one_at_a_time) {
        EXPECT_GT(some_through, 0);
    }
}

// The thread that waits for Ctrl-C is the first the program starts. With none to be had, the run
// goes on without it, and says once that Ctrl-C will then end it without a report. No thread is
// to be had as a user id that owns no other process, allowed one (RLIMIT_NPROC, which root
// ignores: hence the change of user, as in stage 02's own test of refused threads).
TEST_P(Conformance, CommandLineRunsWithoutItsCtrlCThreadWhenNoThreadIsLeft) {
    if (GetParam().binary.empty()) GTEST_SKIP() << GetParam().name << " has no binary to run";
    if (::geteuid() != 0) GTEST_SKIP() << "needs root, to run the binary as another user";
#ifdef SIXWAYS_SANITIZE_SHADOW_MEMORY
    GTEST_SKIP() << "LeakSanitizer and ThreadSanitizer start threads of their own, which this test "
                    "takes away";
#endif
    if (::access("/usr/bin/setpriv", X_OK) != 0 || !has_prlimit()) {
        GTEST_SKIP() << "needs /usr/bin/setpriv and /usr/bin/prlimit (util-linux)";
    }
    LabServer server(on_loopback(0ms));
    server.start();
    const std::string user = std::to_string(40000 + ::getpid() % 20000);
    const auto output = sixways::conformance::run_program(
        "/usr/bin/setpriv",
        {"--reuid=" + user, "--regid=" + user, "--clear-groups", "/usr/bin/prlimit", "--nproc=1",
         "--", GetParam().binary, "3", "--url", server.url("/"), "--json"},
        30s);
    ASSERT_FALSE(output.killed);
    EXPECT_TRUE(output.exit_status == 0 || output.exit_status == 1)
        << "exit status " << output.exit_status << ": " << output.err;
    const Json report = json_report(output);
    EXPECT_EQ(number_in(report, "ok") + number_in(report, "failed"), 3) << output.out;
    EXPECT_EQ(occurrences(output.err, "Ctrl-C will end the run without a report"), 1u) << output.err;
}

// On a terminal, stderr shows how far the run has got: requests done of N, failed, and the time
// since the first started; the clock moves on while no request finishes (each takes a second here).
TEST_P(Conformance, CommandLineShowsProgressOnATerminal) {
    if (GetParam().binary.empty()) GTEST_SKIP() << GetParam().name << " has no binary to run";
    LabServer server(on_loopback(1s));
    server.start();
    sixways::conformance::ChildStreams terminal;
    terminal.stderr_on_terminal = true;
    const auto output = sixways::conformance::run_program(
        GetParam().binary, {"2", "--url", server.url("/")}, 30s, terminal);
    EXPECT_EQ(output.exit_status, 0) << output.err;
    EXPECT_NE(output.err.find(GetParam().name + ": 0/2 done, 0 failed, 0."), std::string::npos)
        << "no line before the first request finished: " << output.err;
    EXPECT_NE(output.err.find(" s\r"), std::string::npos) << output.err;
    EXPECT_TRUE(output.out.starts_with(GetParam().name + ": 2 requests")) << output.out;
}

// Not with --json (the terminal is left to whoever reads the JSON), and not in a pipe.
TEST_P(Conformance, CommandLineShowsNoProgressWithJsonOrOffATerminal) {
    if (GetParam().binary.empty()) GTEST_SKIP() << GetParam().name << " has no binary to run";
    LabServer server(on_loopback(300ms));
    server.start();
    sixways::conformance::ChildStreams terminal;
    terminal.stderr_on_terminal = true;
    const auto json = sixways::conformance::run_program(
        GetParam().binary, {"2", "--url", server.url("/"), "--json"}, 30s, terminal);
    EXPECT_EQ(json.exit_status, 0) << json.err;
    EXPECT_EQ(json.err, "") << "on a terminal, with --json";
    const auto piped = run_cli(GetParam(), {"2", "--url", server.url("/")});
    EXPECT_EQ(piped.exit_status, 0) << piped.err;
    EXPECT_EQ(piped.err, "") << "in a pipe";
}
