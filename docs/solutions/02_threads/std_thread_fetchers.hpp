// Chapter 02's exercises 4 and 5: stage 02's idea again, with std::thread instead of
// pthread_create, and each thread running stage 01's blocking fetch on one request.
#pragma once

#include <cstddef>
#include <vector>

#include "common/fetch.hpp"

namespace sixways::solutions {

// Exercise 4. One std::thread per request, all started at once; request k's thread writes only
// slot k, and the results come back in request order. A thread the system refuses (std::thread
// throws std::system_error) fails its request with ErrorKind::limit. `options.on_result` is called
// from the threads, concurrently. What is lost against stage 02's start_thread: the stack size.
std::vector<Result> fetch_all_with_std_threads(const std::vector<Request>& requests,
                                               const Options& options);

// One request's result, with its position in `requests`.
struct Finished {
    std::size_t index;
    Result result;
};

// Exercise 5. A pool of `options.concurrency` std::threads (0: one per request) that take requests
// in order from an atomic counter and append each result to one shared vector, under a mutex, as
// it finishes: the vector holds the results in the order the requests finished. `options.on_result`
// is called under that mutex, so never by two threads at once.
std::vector<Finished> fetch_in_completion_order(const std::vector<Request>& requests,
                                                const Options& options);

}  // namespace sixways::solutions
