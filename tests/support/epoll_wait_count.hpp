// How often an epoll loop wakes up: the check that 04_tiny and 05_tiny share. epoll_wait_count.cpp
// stands in for the C library's epoll_wait in every test program that links it (the CMake target
// sixways_epoll_wait_count), as epoll_refusal.cpp does for epoll_ctl and recv: it counts the calls,
// then makes the system call.
#pragma once

#include "common/fetch.hpp"

namespace sixways::testing_support {

// Fetches three requests from an in-process lab server that thinks for 300 ms before it answers,
// and checks that `fetch_all` slept in epoll_wait meanwhile: at least two calls (one wake-up when
// the requests are connected, one when the answers are there; the three may share them) and at most
// six, not one per turn of a spinning loop. No deadline is given, and none is needed.
void expect_few_epoll_waits_while_the_server_thinks(const FetchAll& fetch_all);

// How many epoll_wait calls the calling thread has made so far, for a check with bounds of its own
// (the learner's checker, lab/check/, allows more than our own stages are held to).
int epoll_wait_calls_on_this_thread();

}  // namespace sixways::testing_support
