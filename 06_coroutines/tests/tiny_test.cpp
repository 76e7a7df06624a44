// 06_tiny: the core and the tiny level of the conformance suite (tests/conformance_core.cpp,
// tests/conformance_tiny.cpp), then what only this tiny version has to show: its binary under low
// limits. Tiny has no deadline, so it is never sent anything that would make it wait for ever
// (no /fault/hang, no /fault/stall, no silent peer): the rest of the conformance suite, which has
// those, runs against 06_coroutines.
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "06_coroutines/tiny.hpp"
#include "common/json_reader.hpp"
#include "common/limits.hpp"
#include "lab/labserver.hpp"
#include "tests/child_process.hpp"
#include "tests/conformance.hpp"
#include "tests/support/stage_support.hpp"

namespace sixways::coroutines::tiny {
namespace {

using namespace std::chrono_literals;
using lab::LabServer;
using testing_support::on_loopback;

// Tiny has no limit on the requests in flight, on purpose (06_coroutines has one), so the command
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

// Capped at a small address space, tiny still ends with its report: every request either got its
// response or failed with `limit`, "out of memory" (it leaves running out of memory to the command
// line). No abort, no internal error.
TEST(TinyBinary, ReportsEveryRequestWhenAddressSpaceIsScarce) {
#ifdef SIXWAYS_SANITIZE_SHADOW_MEMORY
    GTEST_SKIP() << "a sanitizer's shadow memory does not fit under a cap on address space";
#endif
    if (::access("/usr/bin/prlimit", X_OK) != 0) GTEST_SKIP() << "needs /usr/bin/prlimit";
    if (raise_open_file_limit() < 2500) GTEST_SKIP() << "needs 2500 descriptors";
    // The least the binary needs to be loaded at all (its --help runs), in MiB.
    long smallest = 2;
    while (smallest < 256 && conformance::run_program("/usr/bin/prlimit",
                                                      {"--as=" + std::to_string(smallest << 20), "--",
                                                       STAGE_BINARY, "--help"},
                                                      20s)
                                 .exit_status != 0) {
        ++smallest;
    }
    LabServer server(on_loopback(100ms));
    server.start();
    for (const long more : {2L, 5L, 8L, 11L}) {
        SCOPED_TRACE(std::to_string(smallest + more) + " MiB");
        const auto output = conformance::run_program(
            "/usr/bin/prlimit",
            {"--as=" + std::to_string((smallest + more) << 20), "--", STAGE_BINARY, "1000", "--url",
             server.url("/"), "--json"},
            60s);
        ASSERT_FALSE(output.killed);
        EXPECT_TRUE(output.exit_status == 0 || output.exit_status == 1)
            << "exit status " << output.exit_status << ": " << output.err;
        const Json report = parse_json(output.out);
        EXPECT_EQ(report.at("ok").number + report.at("failed").number, 1000) << output.out;
        EXPECT_EQ(output.err.find("terminate"), std::string::npos) << output.err;
        EXPECT_EQ(output.err.find("internal error"), std::string::npos) << output.err;
    }
}

}  // namespace
}  // namespace sixways::coroutines::tiny

const StageUnderTest coroutines_tiny{"06_tiny", &sixways::coroutines::tiny::fetch_all, STAGE_BINARY, false,
                                     "06_coroutines"};
INSTANTIATE_TEST_SUITE_P(Tiny, ConformanceCore, testing::Values(coroutines_tiny), StageName());
INSTANTIATE_TEST_SUITE_P(Tiny, ConformanceTiny, testing::Values(coroutines_tiny), StageName());
