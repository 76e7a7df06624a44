// What this stage asks of epoll, through tests/support/epoll_refusal.cpp, which stands in for the
// kernel's epoll_ctl: when epoll refuses a socket, the loop closes that fetch and only its request
// fails, with `limit`, while the others go on; and a request costs one ADD and one MOD (its wait
// turns from writable to readable), no DEL, and two recv() calls: the fetch tries one before it
// yields its wait for readable, and right after the request that one finds nothing (stage 06 waits
// first).
#include <gtest/gtest.h>

#include "05_generators/fetch.hpp"
#include "tests/support/epoll_refusal.hpp"

TEST(FetchLoop, FailsARequestWhoseSocketEpollRefusesWithLimitAndGoesOn) {
    using sixways::testing_support::expect_a_refused_socket_fails_only_its_request;
    expect_a_refused_socket_fails_only_its_request(&sixways::generators::fetch_all);
}

TEST(FetchLoop, ARequestCostsOneAddOneModAndTwoRecvs) {
    sixways::testing_support::expect_calls_per_request(&sixways::generators::fetch_all, 2);
}
