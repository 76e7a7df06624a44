// The core of the conformance suite: the cases every fetcher passes, the tiny version of a stage
// (NN_tiny) as well as the full one. A tiny version has no deadline, no second address and no
// limit, so nothing here needs one: every server answers, or closes, or refuses. The cases that
// need a deadline (a server that hangs or stalls), more than one address, a limit or a stage's
// own options are in conformance.cpp, which full stages run as well.
//
// Deadlines: the cases that give one give a generous one, or check that an error came at once,
// before it; no case asserts how fast anything is.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <thread>

#include "common/address.hpp"
#include "common/url.hpp"
#include "lab/labserver.hpp"
#include "tests/conformance.hpp"
#include "tests/conformance_support.hpp"
#include "tests/support/stage_support.hpp"

using namespace std::chrono_literals;
using sixways::Duration;
using sixways::ErrorKind;
using sixways::Json;
using sixways::Options;
using sixways::Request;
using sixways::Result;
using sixways::lab::LabServer;
using namespace sixways::conformance;
using sixways::testing_support::on_loopback;
using sixways::testing_support::SilentServer;
using sixways::testing_support::with_timeout;

// ---- Every request gets its own response, exactly once, in order ----

TEST_P(ConformanceCore, ReturnsEachPathsOwnBodyWithAllRequestsInFlight) {
    check_distinct_paths(GetParam(), 50, 0);
}

TEST_P(ConformanceCore, ReturnsNoResultsAndMakesNoConnectionForNoRequests) {
    LabServer server(on_loopback(0ms));
    server.start();
    int calls = 0;
    Options options = with_timeout(1s);
    options.on_result = [&](std::size_t, const Result&) { ++calls; };
    EXPECT_TRUE(fetch(GetParam(), {}, options).empty());
    EXPECT_EQ(calls, 0);
    EXPECT_EQ(server.stats().accepted, 0u);
}

// ---- Three framings: Content-Length, chunked, and the server closing the connection ----

// More than the socket buffers hold: read in many pieces, each appended in order.
TEST_P(ConformanceCore, ReceivesAThreeMegabyteBodyComplete) {
    LabServer server(on_loopback(0ms));
    server.start();
    const std::string path = "/bytes/3000000";
    const std::vector<Result> results = fetch(GetParam(), {request_for(server, path)}, with_timeout(10s));

    ASSERT_EQ(results.size(), 1u);
    const Result& result = results[0];
    ASSERT_TRUE(result.ok()) << describe(result);
    EXPECT_EQ(result.response.status, 200);
    EXPECT_EQ(result.response.body_bytes, 3'000'000u);
    EXPECT_EQ(result.response.body.size(), 3'000'000u);
    EXPECT_NE(first_line(result.response.body).find(path), std::string::npos)
        << "the body does not start by echoing " << path;
    const std::string expected = body_of(raw_get(server, path));
    ASSERT_EQ(expected.size(), 3'000'000u) << "the suite's own read of " << path << " is incomplete";
    EXPECT_EQ(first_difference(after_first_line(result.response.body), after_first_line(expected)), "")
        << "the body differs from what the lab server sends";
}

TEST_P(ConformanceCore, DecodesChunkedBodiesOfAnySize) {
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

// A response with neither Content-Length nor chunked framing ends where the server closes the
// connection (RFC 9112 6.3): the lab server always frames its bodies, so a peer made here sends
// one such response.
TEST_P(ConformanceCore, ReadsABodyThatEndsWhenTheServerCloses) {
    SilentServer peer;
    std::string body;
    for (int line = 0; body.size() < 200'000; ++line) {
        body += "line " + std::to_string(line) + " of a body framed by the close\n";
    }
    std::string problem;
    std::thread answer([&] {
        try {
            const int fd = peer.accept();
            std::string request;
            char buffer[4096];
            while (request.find("\r\n\r\n") == std::string::npos) {
                pollfd entry{fd, POLLIN, 0};
                if (::poll(&entry, 1, 10'000) != 1) break;
                const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
                if (n <= 0) break;
                request.append(buffer, static_cast<std::size_t>(n));
            }
            const std::string response = "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + body;
            for (std::size_t sent = 0; sent < response.size();) {
                const ssize_t n = ::send(fd, response.data() + sent, response.size() - sent, MSG_NOSIGNAL);
                if (n <= 0) break;
                sent += static_cast<std::size_t>(n);
            }
            ::close(fd);
        } catch (const std::exception& error) {
            problem = error.what();
        }
    });

    const std::vector<Result> results = fetch(GetParam(), {sixways::testing_support::request_for(peer.url())},
                                              with_timeout(10s));
    answer.join();

    EXPECT_EQ(problem, "");
    ASSERT_EQ(results.size(), 1u);
    ASSERT_TRUE(results[0].ok()) << describe(results[0]);
    EXPECT_EQ(results[0].response.status, 200);
    EXPECT_EQ(results[0].response.body_bytes, body.size());
    EXPECT_EQ(first_difference(results[0].response.body, body), "");
}

// ---- A response cut short, a refused connection ----

// The server closes (or resets) the connection before the response is complete: before any byte,
// in the middle of the headers, or before the body has the length its header promised. The
// client sees it at once, from the close itself, and reports where it was: receiving.
TEST_P(ConformanceCore, ReportsAResponseCutShortAsAReceiveError) {
    LabServer server(on_loopback(0ms));
    server.start();
    const Duration timeout = 1s;
    const std::vector<std::string> faults = {"close", "partial-headers", "short-body", "reset"};
    for (const std::string& fault : faults) {
        SCOPED_TRACE("/fault/" + fault);
        const std::vector<Result> results =
            fetch(GetParam(), {request_for(server, "/fault/" + fault)}, with_timeout(timeout));
        ASSERT_EQ(results.size(), 1u);
        const Result& result = results[0];
        ASSERT_FALSE(result.ok()) << "a broken response was taken for a good one: " << describe(result);
        EXPECT_EQ(result.error, ErrorKind::receive) << describe(result);
        EXPECT_FALSE(result.error_message.empty());
        EXPECT_LT(elapsed_ms(result), in_ms(timeout))
            << "the error was clear at once, yet the client waited for the deadline";
    }
    EXPECT_EQ(server.stats().requests, faults.size());
}

TEST_P(ConformanceCore, ReportsARefusedConnectionAsAConnectError) {
    const std::uint16_t port = port_with_nothing_listening();
    const sixways::Url url = sixways::parse_url("http://127.0.0.1:" + std::to_string(port) + "/");
    const std::vector<Result> results = fetch(GetParam(), {Request{url, sixways::resolve(url)}}, with_timeout(1s));

    ASSERT_EQ(results.size(), 1u);
    EXPECT_EQ(results[0].error, ErrorKind::connect) << describe(results[0]);
    EXPECT_NE(results[0].error_message.find("refused"), std::string::npos) << results[0].error_message;
}

// ---- The command line ----

TEST_P(ConformanceCore, CommandLineRejectsBadUrlsWithoutSendingAnything) {
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

TEST_P(ConformanceCore, CommandLineRejectsBadRequestCounts) {
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

TEST_P(ConformanceCore, CommandLineHelpPrintsUsageOnStdout) {
    if (GetParam().binary.empty()) GTEST_SKIP() << GetParam().name << " has no binary to run";
    const auto output = run_cli(GetParam(), {"--help"});
    EXPECT_EQ(output.exit_status, 0) << output.err;
    for (const char* option : {"--url", "--json", "--trace"}) {
        EXPECT_NE(output.out.find(option), std::string::npos) << "usage does not mention " << option << ":\n"
                                                              << output.out;
    }
}

TEST_P(ConformanceCore, CommandLineWithZeroRequestsMakesNoConnection) {
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

TEST_P(ConformanceCore, CommandLinePrintsOneLineReport) {
    if (GetParam().binary.empty()) GTEST_SKIP() << GetParam().name << " has no binary to run";
    LabServer server(on_loopback(0ms));
    server.start();
    const auto output = run_cli(GetParam(), {"5", "--url", server.url("/")});
    EXPECT_EQ(output.exit_status, 0) << output.err;
    EXPECT_TRUE(output.out.starts_with(GetParam().name + ": ")) << output.out;
    EXPECT_EQ(std::count(output.out.begin(), output.out.end(), '\n'), 1) << output.out;
    EXPECT_TRUE(output.out.ends_with("\n")) << output.out;
}

TEST_P(ConformanceCore, CommandLineJsonReportIsOneObjectWithEveryKey) {
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

TEST_P(ConformanceCore, CommandLineExitsOneAndCountsConnectErrorsWhenRefused) {
    if (GetParam().binary.empty()) GTEST_SKIP() << GetParam().name << " has no binary to run";
    const std::string url = "http://127.0.0.1:" + std::to_string(port_with_nothing_listening()) + "/";
    const auto output = run_cli(GetParam(), {"3", "--url", url, "--json"});
    EXPECT_EQ(output.exit_status, 1) << output.err;
    const Json report = json_report(output);
    EXPECT_EQ(number_in(report, "ok"), 0);
    EXPECT_EQ(number_in(report, "failed"), 3);
    const Json* errors = report.find("errors");
    ASSERT_NE(errors, nullptr);
    EXPECT_EQ(number_in(*errors, "connect"), 3) << output.out;
    EXPECT_NE(output.err.find("refused"), std::string::npos) << "stderr counts each error message: " << output.err;
}

// ---- The command line in a hostile world: closed streams, no thread to spare ----

// Started with stdout closed (`stage ... >&-`), the first file the program opens would get number 1
// and become its stdout: the trace file, here, with the report written into the middle of its JSON.
TEST_P(ConformanceCore, CommandLineWithStdoutClosedKeepsTheTraceFileJson) {
    if (GetParam().binary.empty()) GTEST_SKIP() << GetParam().name << " has no binary to run";
    LabServer server(on_loopback(0ms));
    server.start();
    const std::string trace = ::testing::TempDir() + GetParam().name + "_stdout_closed.json";
    ChildStreams streams;
    streams.close_stdout = true;
    const auto output = run_program(
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
TEST_P(ConformanceCore, CommandLineWithStderrClosedKeepsTheTraceFileJson) {
    if (GetParam().binary.empty()) GTEST_SKIP() << GetParam().name << " has no binary to run";
    const std::string url = "http://127.0.0.1:" + std::to_string(port_with_nothing_listening()) + "/";
    const std::string trace = ::testing::TempDir() + GetParam().name + "_stderr_closed.json";
    ChildStreams streams;
    streams.close_stderr = true;
    const auto output = run_program(
        GetParam().binary, {"3", "--url", url, "--trace", trace}, 20s, streams);
    EXPECT_EQ(output.exit_status, 1) << "three refused connections";
    EXPECT_TRUE(output.out.starts_with(GetParam().name + ": 3 requests")) << output.out;
    const std::string text = contents_of(trace);
    EXPECT_NO_THROW(sixways::parse_json(text)) << text;
    EXPECT_EQ(text.find("3 x connect"), std::string::npos) << "stderr went into the trace: " << text;
    std::remove(trace.c_str());
}

// And with all three closed, a run goes as usual.
TEST_P(ConformanceCore, CommandLineWithEveryStandardStreamClosedFetchesAndTraces) {
    if (GetParam().binary.empty()) GTEST_SKIP() << GetParam().name << " has no binary to run";
    LabServer server(on_loopback(0ms));
    server.start();
    const std::string trace = ::testing::TempDir() + GetParam().name + "_streams_closed.json";
    ChildStreams streams;
    streams.close_stdin = streams.close_stdout = streams.close_stderr = true;
    const auto output = run_program(
        GetParam().binary, {"3", "--url", server.url("/"), "--trace", trace}, 20s, streams);
    EXPECT_EQ(output.exit_status, 0);
    const std::string text = contents_of(trace);
    EXPECT_NO_THROW(sixways::parse_json(text)) << text;
    raw_get(server, "/sentinel");
    EXPECT_EQ(server.stats().requests, 4u) << "three requests and the sentinel, nothing else";
    std::remove(trace.c_str());
}

// The thread that waits for Ctrl-C is the first the program starts. With none to be had, the run
// goes on without it, and says once that Ctrl-C will then end it without a report. No thread is
// to be had as a user id that owns no other process, allowed one (RLIMIT_NPROC, which root
// ignores: hence the change of user, as in stage 02's own test of refused threads).
TEST_P(ConformanceCore, CommandLineRunsWithoutItsCtrlCThreadWhenNoThreadIsLeft) {
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
    const auto output = run_program(
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

// ---- Progress on a terminal ----

// On a terminal, stderr shows how far the run has got: requests done of N, failed, and the time
// since the first started; the clock moves on while no request finishes (each takes a second here).
TEST_P(ConformanceCore, CommandLineShowsProgressOnATerminal) {
    if (GetParam().binary.empty()) GTEST_SKIP() << GetParam().name << " has no binary to run";
    LabServer server(on_loopback(1s));
    server.start();
    ChildStreams terminal;
    terminal.stderr_on_terminal = true;
    const auto output = run_program(
        GetParam().binary, {"2", "--url", server.url("/")}, 30s, terminal);
    EXPECT_EQ(output.exit_status, 0) << output.err;
    EXPECT_NE(output.err.find(GetParam().name + ": 0/2 done, 0 failed, 0."), std::string::npos)
        << "no line before the first request finished: " << output.err;
    EXPECT_NE(output.err.find(" s\r"), std::string::npos) << output.err;
    EXPECT_TRUE(output.out.starts_with(GetParam().name + ": 2 requests")) << output.out;
}

// Not with --json (the terminal is left to whoever reads the JSON), and not in a pipe.
TEST_P(ConformanceCore, CommandLineShowsNoProgressWithJsonOrOffATerminal) {
    if (GetParam().binary.empty()) GTEST_SKIP() << GetParam().name << " has no binary to run";
    LabServer server(on_loopback(300ms));
    server.start();
    ChildStreams terminal;
    terminal.stderr_on_terminal = true;
    const auto json = run_program(
        GetParam().binary, {"2", "--url", server.url("/"), "--json"}, 30s, terminal);
    EXPECT_EQ(json.exit_status, 0) << json.err;
    EXPECT_EQ(json.err, "") << "on a terminal, with --json";
    const auto piped = run_cli(GetParam(), {"2", "--url", server.url("/")});
    EXPECT_EQ(piped.exit_status, 0) << piped.err;
    EXPECT_EQ(piped.err, "") << "in a pipe";
}
