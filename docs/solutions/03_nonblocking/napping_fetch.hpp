// Chapter 03, exercise 5: stage 03's loop with a nap between passes.
#pragma once

#include <cstddef>
#include <vector>

#include "common/duration.hpp"
#include "common/fetch.hpp"

namespace sixways::solutions {

// Stage 03's fetch_all (non-blocking sockets, every request in flight asked on each pass), except
// that after every pass that leaves requests in flight it sleeps for `nap`. When `passes` is not
// null, it receives the number of passes made. With a nap of zero it spins like stage 03.
std::vector<Result> fetch_all_napping(const std::vector<Request>& requests, const Options& options,
                                      Duration nap, std::size_t* passes = nullptr);

}  // namespace sixways::solutions
