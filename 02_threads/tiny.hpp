// 02_tiny's fetch_all, for its main (tiny_main.cpp) and its tests. The lesson is tiny.cpp.
#pragma once

#include <vector>

#include "common/fetch.hpp"

namespace sixways::threads::tiny {

// A thread per request, all started at once, each running 01_tiny's blocking fetch; a request whose
// thread the system refuses fails with `limit`. options.on_result is called from those threads, at
// the same time. No deadline and no pool: options.timeout and options.concurrency are not used.
std::vector<Result> fetch_all(const std::vector<Request>& requests, const Options& options);

}  // namespace sixways::threads::tiny
