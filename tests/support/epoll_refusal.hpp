// When epoll refuses a socket, only that request may fail: the check that stages 04 to 06 share.
// epoll_refusal.cpp stands in for the kernel's epoll_ctl in every test program that links it (the
// CMake target sixways_epoll_refusal), so that a test can make epoll refuse one socket, and count
// the epoll_ctl and recv calls a loop makes.
#pragma once

#include "common/fetch.hpp"

namespace sixways::testing_support {

// Fetches three requests from an in-process lab server with `fetch_all`, while epoll refuses the
// first request's socket (EPOLL_CTL_ADD fails with ENOSPC), and checks that only that request
// failed, with `limit` and "epoll_ctl: No space left on device", and that no descriptor is left
// open.
void expect_a_refused_socket_fails_only_its_request(const FetchAll& fetch_all);

// Fetches three requests from an in-process lab server that answers after 50 ms (so that no answer
// is there right after the request is sent), and checks that `fetch_all` made one EPOLL_CTL_ADD and
// `mods_per_request` EPOLL_CTL_MOD per request (the connect's "writable" becomes "readable": one
// MOD, or two when a reader is added before the writer goes), and no EPOLL_CTL_DEL (the socket
// leaves epoll by being closed), and `recvs_per_request` recv() calls per request, for an answer
// that arrives in one piece.
void expect_calls_per_request(const FetchAll& fetch_all, int recvs_per_request,
                              int mods_per_request = 1);

// The epoll_ctl calls this thread has made so far, by operation. (Per thread: an in-process lab
// server's calls are not counted.)
struct EpollCtlCalls {
    int add = 0;
    int mod = 0;
    int del = 0;
};
EpollCtlCalls epoll_ctl_calls();

}  // namespace sixways::testing_support
