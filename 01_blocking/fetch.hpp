// Stage 01: blocking sockets, one request after another.
#pragma once

#include <vector>

#include "common/fetch.hpp"

namespace sixways::blocking {

// Fetches every request in order, each to its last byte before the next one starts: connect, send
// and recv block the calling thread until the network answers. `options.concurrency` is ignored
// (it is always 1). Calls `options.on_result` after each request, on the calling thread.
std::vector<Result> fetch_all(const std::vector<Request>& requests, const Options& options);

}  // namespace sixways::blocking
