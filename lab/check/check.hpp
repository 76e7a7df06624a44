// The learner's checker (lab/check.sh): what its runner, its own checks and each stage's file share.
//
// A check runner is one program per stage and per file under check: the file's fetch_all linked
// in, its binary (the file built with the stage's tiny_main.cpp) beside it. Every check is a
// GoogleTest case: the core conformance cases (tests/conformance_core.cpp), the rest of the suite
// for --real (tests/conformance.cpp), and the checks of what a stage is about
// (lab/check/stage_checks.cpp). runner.cpp runs each one in a process of its own and prints the
// checklist.
#pragma once

#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "tests/conformance.hpp"

struct CheckedStage {
    StageUnderTest stage;  // the file's fetch_all and binary, as the conformance suite takes them
    int number = 0;        // 1 to 6: which of the stage checks apply
    std::string labserver;  // the lab server's binary, for the commands that reproduce a failure
};

inline void PrintTo(const CheckedStage& checked, std::ostream* out) { *out << checked.stage.name; }

// The checks of what a stage is about (stage_checks.cpp): requests in flight at once, sockets that
// never block, a loop that does not spin, every request sent whole, no descriptor left open.
class StageChecks : public testing::TestWithParam<CheckedStage> {};

// The stage under check, defined by the stage's file (lab/check/stages/NN.cpp); runner.cpp reads it.
extern const CheckedStage checked_stage;
