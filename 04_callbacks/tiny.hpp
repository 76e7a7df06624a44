// 04_tiny's fetch_all, for its main (tiny_main.cpp) and its tests. The lesson is tiny.cpp.
#pragma once

#include <vector>

#include "common/fetch.hpp"

namespace sixways::callbacks::tiny {

// One Fetcher per request, all at once, on a plain epoll loop. No deadline and no limit:
// options.timeout and options.concurrency are not used.
std::vector<Result> fetch_all(const std::vector<Request>& requests, const Options& options);

}  // namespace sixways::callbacks::tiny
