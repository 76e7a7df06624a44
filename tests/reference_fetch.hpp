// The conformance suite's own reference fetcher. It is not one of the six stages and teaches
// nothing: it exists so the suite itself is checked against a fetcher known to keep the contract
// (tests/conformance_reference_test.cpp). One request after another, each with a deadline enforced
// by poll(); no concurrency.
#pragma once

#include <vector>

#include "common/fetch.hpp"

namespace sixways::conformance_reference {

// The common signature. options.concurrency is ignored: requests always go one at a time.
std::vector<Result> fetch_all(const std::vector<Request>& requests, const Options& options);

}  // namespace sixways::conformance_reference
