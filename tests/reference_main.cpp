// The command line around the suite's reference fetcher, so the suite's command-line cases are
// checked too. The same shape as every stage's main.cpp.
#include "common/cli.hpp"
#include "tests/reference_fetch.hpp"

int main(int argc, char** argv) {
    sixways::StageInfo stage;
    stage.name = "conformance_reference_cli";
    stage.summary = "the conformance suite's reference: blocking, one request at a time";
    stage.fetch_all = &sixways::conformance_reference::fetch_all;
    stage.one_at_a_time = true;
    return sixways::run_stage(argc, argv, stage);
}
