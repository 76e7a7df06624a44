// Stage 02: a POSIX thread per request, or a fixed pool of them (--concurrency C).
#pragma once

#include <vector>

#include "common/fetch.hpp"

namespace sixways::threads {

// Fetches every request on threads of its own, each running stage 01's blocking code. With
// `options.concurrency` 0, one thread per request, all started at once; with C > 0, a pool of that
// many threads that take the requests in order. A request whose thread the system refuses fails with
// ErrorKind::limit; the others go on. `options.on_result` is called from the worker threads,
// concurrently.
std::vector<Result> fetch_all(const std::vector<Request>& requests, const Options& options);

}  // namespace sixways::threads
