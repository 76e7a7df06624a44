// 05_tiny: the core and the tiny level of the conformance suite (tests/conformance_core.cpp,
// tests/conformance_tiny.cpp), then what only this tiny version has to show: its sockets in
// non-blocking mode, how often its loop wakes up and calls epoll_ctl and recv(), and its binary
// under a low descriptor limit. Tiny has no deadline, so it is never sent anything that would
// make it wait for ever (no /fault/hang, no /fault/stall, no silent peer): the rest of the
// conformance suite, which has those, runs against 05_generators.
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "05_generators/tiny.hpp"
#include "common/json_reader.hpp"
#include "common/limits.hpp"
#include "lab/labserver.hpp"
#include "tests/child_process.hpp"
#include "tests/conformance.hpp"
#include "tests/support/epoll_refusal.hpp"
#include "tests/support/epoll_wait_count.hpp"
#include "tests/support/stage_support.hpp"

namespace sixways::generators::tiny {
namespace {

using namespace std::chrono_literals;
using lab::LabServer;
using testing_support::client_sockets_to;
using testing_support::ClientSockets;
using testing_support::on_loopback;
using testing_support::request_for;

std::vector<Result> fetch(const std::vector<Request>& requests, const Options& options = {}) {
    const testing_support::Watchdog watchdog("05_tiny's fetch_all", 60s);
    return fetch_all(requests, options);
}

// ---- fetch_all ----

// A slow request first, a quick one second: the quick one finishes first, while the slow one's
// socket is still open, and in non-blocking mode. A blocking fetch would finish them in order.
TEST(TinyFetchAll, WaitsForEverySocketAtOnceWithoutBlockingOnAny) {
    LabServer server(on_loopback(0ms));
    server.start();
    const std::vector<Request> requests = {request_for(server.url("/delay/300")),
                                           request_for(server.url("/quick"))};
    ClientSockets while_slow_one_waits;
    Options options;
    options.on_result = [&](std::size_t index, const Result&) {
        if (index == 1) while_slow_one_waits = client_sockets_to(server.port());
    };

    const std::vector<Result> results = fetch(requests, options);

    ASSERT_EQ(results.size(), 2u);
    ASSERT_TRUE(results[0].ok()) << results[0].error_message;
    ASSERT_TRUE(results[1].ok()) << results[1].error_message;
    EXPECT_LT(results[1].timing.done, results[0].timing.done) << "the quick request waited for the slow one";
    EXPECT_EQ(while_slow_one_waits.open, 1) << "the slow request's socket, and only it, was open";
    EXPECT_EQ(while_slow_one_waits.non_blocking, 1);
}

// While the server thinks, the loop sleeps in epoll_wait: a few calls for three requests, not one
// per turn of a spinning loop.
TEST(TinyFetchAll, SleepsInEpollWaitWhileTheServerThinks) {
    testing_support::expect_few_epoll_waits_while_the_server_thinks(&fetch_all);
}

// One EPOLL_CTL_ADD (the connect waits for "writable"), one MOD ("readable", once the request is
// sent), no DEL (closing the socket takes it out of epoll), and one recv() for an answer that
// arrives in one piece: the fetch waits until there is something to read before it calls recv().
TEST(TinyFetchAll, MakesOneAddOneModAndOneRecvPerRequest) {
    testing_support::expect_calls_per_request(&fetch_all, 1, 1);
}

// ---- the binary ----

// Tiny has no limit on the requests in flight, on purpose (05_generators has one), so the command
// line leaves them as they are: under `ulimit -n 64` those that find no descriptor fail with
// `limit`, and the others get through.
TEST(TinyBinary, KeepsNoLimitUnderALowDescriptorLimit) {
#ifdef SIXWAYS_SANITIZE_UNDEFINED
    GTEST_SKIP() << "UBSan's vptr check needs a pipe() to probe memory, and this run leaves no "
                    "descriptor free: it would report a false error. The other builds run it.";
#endif
    if (::access("/usr/bin/prlimit", X_OK) != 0) GTEST_SKIP() << "needs /usr/bin/prlimit";
    LabServer server(on_loopback(100ms));
    server.start();
    const auto output = conformance::run_program(
        "/usr/bin/prlimit", {"--nofile=64", "--", STAGE_BINARY, "200", "--url", server.url("/"), "--json"},
        30s);
    EXPECT_EQ(output.exit_status, 1) << output.err;
    const Json report = parse_json(output.out);
    EXPECT_GT(report.at("ok").number, 0) << output.out;
    EXPECT_EQ(report.at("ok").number + report.at("errors").at("limit").number, 200) << output.out;
    EXPECT_NE(output.err.find("x socket: Too many open files"), std::string::npos) << output.err;
    EXPECT_EQ(output.err.find("requests in flight"), std::string::npos) << output.err;
}

}  // namespace
}  // namespace sixways::generators::tiny

const StageUnderTest generators_tiny{"05_tiny", &sixways::generators::tiny::fetch_all, STAGE_BINARY, false,
                                     "05_generators"};
INSTANTIATE_TEST_SUITE_P(GeneratorsTiny, ConformanceCore, testing::Values(generators_tiny), StageName());
INSTANTIATE_TEST_SUITE_P(GeneratorsTiny, ConformanceTiny, testing::Values(generators_tiny), StageName());
