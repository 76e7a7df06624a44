// 03_tiny's fetch_all, for its main (tiny_main.cpp) and its tests. The lesson is tiny.cpp.
#pragma once

#include <vector>

#include "common/fetch.hpp"

namespace sixways::nonblocking::tiny {

// Every request at once, on the calling thread, with non-blocking sockets polled in a busy loop:
// it never sleeps until the last request has its result. Calls options.on_result on the calling
// thread. No deadline and no limit: options.timeout and options.concurrency are not used.
std::vector<Result> fetch_all(const std::vector<Request>& requests, const Options& options);

}  // namespace sixways::nonblocking::tiny
