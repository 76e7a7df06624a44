// Stage 01 under check: the file's fetch_all (sixways::blocking::tiny::fetch_all, which
// 01_blocking/tiny.hpp declares and every file for stage 01 defines) and its binary, that file built
// with 01_blocking/tiny_main.cpp. CMake gives TINY_BINARY and LABSERVER_BINARY (lab/check/CMakeLists.txt).
#include "01_blocking/tiny.hpp"
#include "lab/check/check.hpp"

const CheckedStage checked_stage{
    {"01_tiny", &sixways::blocking::tiny::fetch_all, TINY_BINARY, true, "01_blocking"}, 1, LABSERVER_BINARY};

INSTANTIATE_TEST_SUITE_P(Check, ConformanceCore, testing::Values(checked_stage.stage), StageName());
INSTANTIATE_TEST_SUITE_P(Check, StageChecks, testing::Values(checked_stage));
// --real: the rest of the suite, on fetch_all alone. Its command-line cases need a full stage's
// options (--timeout, --concurrency), which tiny_main.cpp refuses: with no binary, they skip.
INSTANTIATE_TEST_SUITE_P(Real, Conformance,
                         testing::Values(StageUnderTest{checked_stage.stage.name, checked_stage.stage.fetch_all, "",
                                                        checked_stage.stage.one_at_a_time}),
                         StageName());
