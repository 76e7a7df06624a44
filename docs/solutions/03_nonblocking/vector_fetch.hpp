// Chapter 03, exercise 6: stage 03's loop with its requests in flight in a std::vector.
#pragma once

#include <vector>

#include "common/fetch.hpp"

namespace sixways::solutions {

// Does exactly what stage 03's fetch_all does (non-blocking sockets, every request in flight asked
// on each pass, at most `options.concurrency` at once, 0: all), but keeps the requests in flight in
// a std::vector instead of a std::list.
std::vector<Result> fetch_all_in_vector(const std::vector<Request>& requests,
                                        const Options& options);

}  // namespace sixways::solutions
