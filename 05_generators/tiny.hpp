// 05_tiny's fetch_all, for its main (tiny_main.cpp) and its tests. The lesson is tiny.cpp.
#pragma once

#include <vector>

#include "common/fetch.hpp"

namespace sixways::generators::tiny {

// One generator per request, all at once, resumed by a plain epoll loop. No deadline and no limit:
// options.timeout and options.concurrency are not used.
std::vector<Result> fetch_all(const std::vector<Request>& requests, const Options& options);

}  // namespace sixways::generators::tiny
