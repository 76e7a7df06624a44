// Stage 04 under check: the file's fetch_all (sixways::callbacks::tiny::fetch_all, which
// 04_callbacks/tiny.hpp declares and every file for stage 04 defines) and its binary, that file built
// with 04_callbacks/tiny_main.cpp. CMake gives TINY_BINARY and LABSERVER_BINARY (lab/check/CMakeLists.txt).
#include "04_callbacks/tiny.hpp"
#include "lab/check/check.hpp"

const CheckedStage checked_stage{
    {"04_tiny", &sixways::callbacks::tiny::fetch_all, TINY_BINARY, false, "04_callbacks"}, 4, LABSERVER_BINARY};

INSTANTIATE_TEST_SUITE_P(Check, ConformanceCore, testing::Values(checked_stage.stage), StageName());
INSTANTIATE_TEST_SUITE_P(Check, StageChecks, testing::Values(checked_stage));
