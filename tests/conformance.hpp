// The conformance suite: the same cases, run against every stage's fetch_all and binary.
//
// Six stages wait for the network in six different ways; from the outside they must be
// indistinguishable. Every case here starts the lab server in-process on a free loopback port, asks
// the stage under test to fetch from it, and checks what a user of the library call (or of the
// command line) is promised in DESIGN.md: one result per request, in request order, each with its
// own body; a clear error of the right kind for every fault the lab server can play; a deadline per
// request; no connection for bad usage.
//
// The suite has two levels. The core (ConformanceCore, tests/conformance_core.cpp, CMake target
// sixways_conformance_core) holds the cases every fetcher passes, a stage's tiny version included:
// the right body for each request, three framings, a response cut short, a refused connection, no
// requests at all, and the command line's report, --json, --trace and bad usage. The rest
// (Conformance, tests/conformance.cpp, sixways_conformance) needs what only a full stage has:
// deadlines, a second address, limits. No case is in both. A full stage links both libraries and
// joins both, in its own test file:
//
//     const StageUnderTest blocking{"01_blocking", &sixways::blocking::fetch_all, STAGE_BINARY, true};
//     INSTANTIATE_TEST_SUITE_P(Blocking, ConformanceCore, testing::Values(blocking), StageName());
//     INSTANTIATE_TEST_SUITE_P(Blocking, Conformance, testing::Values(blocking), StageName());
//
// A tiny version links sixways_conformance_core and sixways_conformance_tiny, and joins
// ConformanceCore and ConformanceTiny (tests/conformance_tiny.cpp: the cases every tiny version
// passes and that only a tiny version is asked, such as refusing --timeout):
//
//     const StageUnderTest tiny{"01_tiny", &sixways::blocking::tiny::fetch_all, STAGE_BINARY, false,
//                               "01_blocking"};
//     INSTANTIATE_TEST_SUITE_P(BlockingTiny, ConformanceCore, testing::Values(tiny), StageName());
//     INSTANTIATE_TEST_SUITE_P(BlockingTiny, ConformanceTiny, testing::Values(tiny), StageName());
//
// The tests are named "Blocking/Conformance.TreatsErrorStatusesAsResponses/01_blocking" (without
// `StageName()`, they end in "/0").
#pragma once

#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "common/fetch.hpp"

struct StageUnderTest {
    std::string name;           // "01_blocking": also the "stage" the binary's JSON report names
    sixways::FetchAll fetch_all;
    std::string binary;         // path of the stage's executable, for the command-line cases;
                                // empty skips them
    bool one_at_a_time = false;  // its command line sends one request at a time (01_blocking)
    std::string full_stage = {};  // a tiny version's full stage ("04_callbacks"), which its
                                  // bad-usage message points to; empty for a full stage
};

// What GoogleTest prints for a parameter ("GetParam() = 01_blocking").
inline void PrintTo(const StageUnderTest& stage, std::ostream* out) { *out << stage.name; }

// Ends each test's name in the stage's name:
// "Blocking/Conformance.TreatsErrorStatusesAsResponses/01_blocking".
struct StageName {
    std::string operator()(const testing::TestParamInfo<StageUnderTest>& info) const {
        return info.param.name;
    }
};

// Each case calls the stage's fetch_all under a watchdog: a fetcher that never returns would
// otherwise hang the whole test binary.
// The core cases, in tests/conformance_core.cpp: every stage and every tiny version passes them.
class ConformanceCore : public testing::TestWithParam<StageUnderTest> {};
// The rest, in tests/conformance.cpp: full stages only.
class Conformance : public testing::TestWithParam<StageUnderTest> {};
// What every tiny version shares, in tests/conformance_tiny.cpp: tiny versions only.
class ConformanceTiny : public testing::TestWithParam<StageUnderTest> {};
