// Stage 06: the fetch as a coroutine, run by a mini asyncio.
//
// Stage 05 wrote the fetch top to bottom again, as a generator that yields what it waits for, but
// a generator cannot hand its waiting to a sub-generator: the loop knew about descriptors and
// deadlines, and everything else was done by hand. Here `co_await` composes. The fetch awaits
// connect_to_any, sock_sendall and receive_response, coroutines that wait on the socket through
// futures and hand back the socket and the response; the deadline is wait_for around the whole
// exchange; all requests together are one gather, or,
// with a concurrency limit, C workers that share the list. The loop underneath
// (event_loop.hpp) knows nothing of HTTP.
#pragma once

#include <cstddef>
#include <vector>

#include "06_coroutines/event_loop.hpp"
#include "06_coroutines/task.hpp"
#include "common/fetch.hpp"

namespace sixways::coroutines {

// One request from its first connect to its last byte, within options.timeout, with every error
// turned into the Result (the fetch throws only CancelledError, when it is cancelled, and
// std::bad_alloc). Calls
// options.on_result(index, result), when set, as soon as the result is final. `request` and
// `options` are read while the task runs, so they must outlive it.
Coroutine<Result> fetch(EventLoop& loop, const Request& request, const Options& options, std::size_t index = 0);

// The library call of this stage: one fetch per request, all at once or at most
// options.concurrency at a time, on one event loop; on_result as each finishes; results in order.
std::vector<Result> fetch_all(const std::vector<Request>& requests, const Options& options);

}  // namespace sixways::coroutines
