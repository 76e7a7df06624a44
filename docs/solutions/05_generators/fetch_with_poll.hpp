// Exercise 6: the smallest loop that can run stage 05's fetch. One request, one fetch_one, and
// poll() on its one descriptor instead of FetchLoop's epoll: the fetch does not know the difference.
#pragma once

#include "common/fetch.hpp"

namespace sixways::solutions {

// Runs generators::fetch_one for `request` to its end and returns its result: a response, or the
// error the fetch wrote (a timeout names the phase it was in, as with the real loop).
Result fetch_with_poll(const Request& request, const Options& options);

}  // namespace sixways::solutions
