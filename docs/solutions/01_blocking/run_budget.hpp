// Exercise 5 of chapter 01: one deadline for the whole run, on top of stage 01's library call.
//
// Stage 01 gives each request a deadline, and runs the requests one after another, so a run can
// take N x --timeout: ten requests to a server that never answers wait 10 x 10 s with the default.
// fetch_all_within bounds the run as well. Each request gets the smaller of its own timeout and the
// time left in the run; once the run's time is spent, the remaining requests fail at once, without
// connecting.
#pragma once

#include <vector>

#include "common/duration.hpp"
#include "common/fetch.hpp"

namespace sixways::exercise01 {

// Like sixways::blocking::fetch_all, with `budget` for the whole run, counted from the call. A
// request that finds no time left fails with ErrorKind::timeout and the message
// "timeout: the run's 300 ms were spent before this request started" (for a budget of 300 ms);
// its timing stays at the clock's epoch, since it never started. Calls options.on_result after
// each request, on the calling thread, as stage 01 does.
std::vector<Result> fetch_all_within(const std::vector<Request>& requests, const Options& options,
                                     Duration budget);

}  // namespace sixways::exercise01
