// Stage 03: non-blocking sockets, polled in a busy loop.
#pragma once

#include <vector>

#include "common/fetch.hpp"

namespace sixways::nonblocking {

// Fetches every request on the calling thread with non-blocking sockets, at most
// `options.concurrency` at once (0: all of them), by asking every socket again and again whether it
// can go on. Never sleeps: it keeps one core busy until the last request is finished. Calls
// `options.on_result` on the calling thread.
std::vector<Result> fetch_all(const std::vector<Request>& requests, const Options& options);

// The naive version: non-blocking sockets, but each request is spun on until it is finished before
// the next one starts. As slow as stage 01, and it keeps a core busy besides. `options.concurrency`
// is ignored (it is always 1).
std::vector<Result> fetch_all_one_at_a_time(const std::vector<Request>& requests,
                                            const Options& options);

}  // namespace sixways::nonblocking
