// --explain, as a user runs it: each narrating stage fetches one request from an in-process lab
// server, and its narration must tell the same story, line for line, as the code and the system
// calls it makes. Descriptors, times and byte counts are masked: they change from run to run; the
// kinds of line, and their order, must not.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "lab/labserver.hpp"
#include "tests/child_process.hpp"

namespace sixways {
namespace {

using conformance::ChildOutput;
using conformance::run_program;

constexpr auto bound = std::chrono::seconds(20);

// The narration's lines with every number masked, and the report line as "<report>".
std::vector<std::string> kinds_of_line(const std::string& out, const std::string& stage) {
    std::vector<std::string> kinds;
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line);) {
        if (line.rfind(stage + ": ", 0) == 0) {
            kinds.push_back("<report>");
            continue;
        }
        line = std::regex_replace(line, std::regex(R"(\d+\.\d+ ms)"), "T ms");
        line = std::regex_replace(line, std::regex(R"(\d+)"), "#");
        kinds.push_back(line);
    }
    return kinds;
}

class Explain : public ::testing::Test {
protected:
    void SetUp() override {
        // A delay, so that the answer is never there before the client waits for it: then every
        // run takes the same path (a recv right after sending finds nothing). 300 ms, not less:
        // on a loaded machine a client can be kept off the CPU for tens of milliseconds between
        // its send and its recv.
        lab::LabServerOptions options;
        options.hosts = {"127.0.0.1"};
        options.port = 0;
        options.delay = std::chrono::milliseconds(300);
        server_ = std::make_unique<lab::LabServer>(options);
        server_->start();
    }

    ChildOutput run(const char* binary, std::vector<std::string> args) {
        args.push_back("--url");
        args.push_back(server_->url("/"));
        return run_program(binary, args, bound);
    }

    std::unique_ptr<lab::LabServer> server_;
};

TEST_F(Explain, Stage04NamesTheCallbacksTheLoopRuns) {
    const ChildOutput output = run(STAGE_04, {"1", "--explain"});
    ASSERT_EQ(output.exit_status, 0) << output.err;
    const std::vector<std::string> expected = {
        "start (before the first epoll_wait):",
        "    connect(fd #) -> EINPROGRESS: the handshake goes on in the kernel",
        "turn #: epoll_wait -> # event after T ms: fd # writable",
        "  runs on_connected (fd #)",
        "    getsockopt(fd #, SO_ERROR) -> #: connected",
        "  runs send_request (fd #)",
        "    send(fd #) -> # bytes",
        "turn #: epoll_wait -> # event after T ms: fd # readable",
        "  runs on_readable (fd #)",
        "    recv(fd #) -> # bytes",
        "    close(fd #)",
        "turn #: epoll_wait -> # events after T ms",
        "  runs the call_soon of done(): free the Fetcher, start the next request",
        "<report>",
    };
    EXPECT_EQ(kinds_of_line(output.out, "04_callbacks"), expected) << output.out;
}

TEST_F(Explain, Stage05SaysWhatEachGeneratorYielded) {
    const ChildOutput output = run(STAGE_05, {"1", "--explain"});
    ASSERT_EQ(output.exit_status, 0) << output.err;
    const std::vector<std::string> expected = {
        "start (before the first epoll_wait):",
        "    connect(fd #) -> EINPROGRESS: the handshake goes on in the kernel",
        "    the generator of request # yields Wait{fd #, writable}: the loop arms it in epoll",
        "turn #: epoll_wait -> # event after T ms",
        "  resume the generator of request #: fd # writable (Event::ready)",
        "    getsockopt(fd #, SO_ERROR) -> #: connected",
        "    send(fd #) -> # bytes",
        "    recv(fd #) -> EAGAIN: nothing there now",
        "    the generator of request # yields Wait{fd #, readable}: the loop arms it in epoll",
        "turn #: epoll_wait -> # event after T ms",
        "  resume the generator of request #: fd # readable (Event::ready)",
        "    recv(fd #) -> # bytes",
        "    close(fd #)",
        "    the generator of request # is done: its result is final",
        "    close(fd #)",  // the epoll instance
        "<report>",
    };
    EXPECT_EQ(kinds_of_line(output.out, "05_generators"), expected) << output.out;
}

TEST_F(Explain, Stage06SaysWhichFutureWakesWhichTaskAndWhereEachStepResumes) {
    const ChildOutput output = run(STAGE_06, {"1", "--explain"});
    ASSERT_EQ(output.exit_status, 0) << output.err;
    const std::vector<std::string> expected = {
        "start (before the first epoll_wait):",
        "  task \"Task-#\" is created: its first step is queued",
        "turn #: epoll_wait -> # events after T ms",
        "  step task \"Task-#\": resumes fetch_every",
        "    task \"request #\" is created: its first step is queued",
        "    fetch_every awaits gather, which the step resumes next",
        "    gather awaits wait_all, which the step resumes next",
        "    wait_all awaits a future that is not done: the step ends",
        "turn #: epoll_wait -> # events after T ms",
        "  step task \"request #\": resumes fetch",
        "    fetch awaits wait_for, which the step resumes next",
        "    wait_for awaits exchange, which the step resumes next",
        "    exchange awaits connect_to_any, which the step resumes next",
        "    connect_to_any awaits sock_connect, which the step resumes next",
        "    connect(fd #) -> EINPROGRESS: the handshake goes on in the kernel",
        "    sock_connect awaits the future of fd # writable: the step ends",
        "turn #: epoll_wait -> # event after T ms: fd # writable",
        "  fd # writable completes the future that task \"request #\" awaits in sock_connect: its "
        "step is queued",
        "  step task \"request #\": resumes sock_connect",
        "    getsockopt(fd #, SO_ERROR) -> #: connected",
        "    sock_connect returns: the step resumes connect_to_any, where co_await sock_connect(...) gives the result",
        "    connect_to_any returns: the step resumes exchange, where co_await connect_to_any(...) gives the result",
        "    exchange awaits sock_sendall, which the step resumes next",
        "    send(fd #) -> # bytes",
        "    sock_sendall returns: the step resumes exchange, where co_await sock_sendall(...) gives the result",
        "    exchange awaits receive_response, which the step resumes next",
        "    receive_response awaits the future of fd # readable: the step ends",
        "turn #: epoll_wait -> # event after T ms: fd # readable",
        "  fd # readable completes the future that task \"request #\" awaits in receive_response: "
        "its step is queued",
        "  step task \"request #\": resumes receive_response",
        "    receive_response awaits sock_recv, which the step resumes next",
        "    recv(fd #) -> # bytes",
        "    sock_recv returns: the step resumes receive_response, where co_await sock_recv(...) gives the result",
        "    receive_response returns: the step resumes exchange, where co_await receive_response(...) gives the result",
        "    close(fd #)",
        "    exchange returns: the step resumes wait_for, where co_await exchange(...) gives the result",
        "    wait_for returns: the step resumes fetch, where co_await wait_for(...) gives the result",
        "    fetch returns: the task is done, and its future with it",
        "turn #: epoll_wait -> # events after T ms",
        "  a callback completes the future that task \"Task-#\" awaits in wait_all: its step is "
        "queued",
        "turn #: epoll_wait -> # events after T ms",
        "  step task \"Task-#\": resumes wait_all",
        "    wait_all returns: the step resumes gather, where co_await wait_all(...) gives the result",
        "    gather returns: the step resumes fetch_every, where co_await gather(...) gives the result",
        "    fetch_every returns: the task is done, and its future with it",
        "<report>",
    };
    EXPECT_EQ(kinds_of_line(output.out, "06_coroutines"), expected) << output.out;
}

// A deadline that fires: the timer says whose it is, and the frames unwind by an exception, which
// each parent's co_await rethrows, up to fetch, which files the timeout and returns.
TEST_F(Explain, Stage06SaysWhichDeadlineFiresAndThatTheFramesThrow) {
    const ChildOutput output = run_program(
        STAGE_06, {"1", "--timeout", "1s", "--explain", "--url", server_->url("/fault/stall")}, bound);
    ASSERT_EQ(output.exit_status, 1) << output.err;
    const std::vector<std::string> kinds = kinds_of_line(output.out, "06_coroutines");
    const auto has = [&kinds](const std::string& line) {
        return std::find(kinds.begin(), kinds.end(), line) != kinds.end();
    };
    EXPECT_TRUE(has("  runs wait_for's deadline timer")) << output.out;
    EXPECT_TRUE(has("    exchange throws: the step resumes wait_for, where co_await exchange(...) rethrows the "
                    "exception"))
        << output.out;
    EXPECT_TRUE(has("    wait_for throws: the step resumes fetch, where co_await wait_for(...) rethrows the "
                    "exception"))
        << output.out;
    EXPECT_TRUE(has("    fetch returns: the task is done, and its future with it")) << output.out;
}

// After `full_turns` turns, one line says how many more there were, and then the report.
TEST_F(Explain, ALongRunIsToldForFortyTurnsThenCounted) {
    const ChildOutput output = run(STAGE_04, {"20", "--concurrency", "1", "--explain"});
    ASSERT_EQ(output.exit_status, 0) << output.err;
    const std::vector<std::string> kinds = kinds_of_line(output.out, "04_callbacks");
    std::size_t turns = 0;
    for (const std::string& kind : kinds) turns += kind.rfind("turn #:", 0) == 0 ? 1 : 0;
    EXPECT_EQ(turns, 40u) << output.out;
    ASSERT_GE(kinds.size(), 2u);
    EXPECT_EQ(kinds[kinds.size() - 2], "\u2026 # more turns") << output.out;
    EXPECT_EQ(kinds.back(), "<report>");
}

// On a terminal, stderr shows a progress line; while narrating it does not, as with --json.
TEST_F(Explain, TurnsTheProgressLineOff) {
    conformance::ChildStreams terminal;
    terminal.stderr_on_terminal = true;
    const ChildOutput output =
        run_program(STAGE_05, {"3", "--explain", "--url", server_->url("/")}, bound, terminal);
    ASSERT_EQ(output.exit_status, 0) << output.err;
    EXPECT_EQ(output.err.find("done,"), std::string::npos) << output.err;
}

TEST_F(Explain, IsRefusedByTheStagesThatDoNotNarrateAndWithJson) {
    for (const char* binary : {STAGE_01, STAGE_02, STAGE_03, TINY_04}) {
        const ChildOutput output = run(binary, {"1", "--explain"});
        EXPECT_EQ(output.exit_status, 2) << binary;
        EXPECT_NE(output.err.find("only 04_callbacks, 05_generators and 06_coroutines narrate"),
                  std::string::npos)
            << output.err;
        EXPECT_EQ(output.out, "");
    }
    const ChildOutput output = run(STAGE_06, {"1", "--explain", "--json"});
    EXPECT_EQ(output.exit_status, 2);
    EXPECT_NE(output.err.find("--explain and --json cannot go together"), std::string::npos)
        << output.err;
    EXPECT_EQ(output.out, "");
    EXPECT_EQ(server_->stats().accepted, 0u);  // bad usage sends nothing
}

}  // namespace
}  // namespace sixways
