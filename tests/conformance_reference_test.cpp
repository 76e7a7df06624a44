// The conformance suite run against its own reference fetcher: proof that the cases pass for a
// fetcher that keeps the contract, before (and apart from) any stage.
#include "tests/conformance.hpp"
#include "tests/reference_fetch.hpp"

namespace {
const StageUnderTest reference{"conformance_reference_cli", &sixways::conformance_reference::fetch_all,
                               STAGE_BINARY, true};
}  // namespace

INSTANTIATE_TEST_SUITE_P(Reference, ConformanceCore, testing::Values(reference), StageName());
INSTANTIATE_TEST_SUITE_P(Reference, Conformance, testing::Values(reference), StageName());
