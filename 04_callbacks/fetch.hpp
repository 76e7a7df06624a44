// Stage 04: callbacks on an epoll reactor.
#pragma once

#include <vector>

#include "common/fetch.hpp"

namespace sixways::callbacks {

// Fetches every request on the calling thread, at most `options.concurrency` at once (0: all of
// them). Each request is a Fetcher object whose steps are callbacks; an EventLoop (epoll plus
// timers) calls them when a socket is ready or a deadline has passed, and sleeps otherwise.
// Calls `options.on_result` on the calling thread, once per request, as soon as its result is
// final.
std::vector<Result> fetch_all(const std::vector<Request>& requests, const Options& options);

}  // namespace sixways::callbacks
