// 06_tiny's fetch_all, for its main (tiny_main.cpp) and its tests. The lesson is tiny.cpp.
#pragma once

#include <vector>

#include "common/fetch.hpp"

namespace sixways::coroutines::tiny {

// One task per request, all at once, on the minimal runtime of tiny.cpp. No deadline and no limit:
// options.timeout and options.concurrency are not used.
std::vector<Result> fetch_all(const std::vector<Request>& requests, const Options& options);

}  // namespace sixways::coroutines::tiny
