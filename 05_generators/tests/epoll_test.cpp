// What this stage asks of epoll, through tests/support/epoll_refusal.cpp, which stands in for the
// kernel's epoll_ctl: when epoll refuses a socket, the loop closes that fetch and only its request
// fails, with `limit`, while the others go on; and a request costs one ADD and one MOD (EPOLLONESHOT
// re-armed for reading), and no DEL.
#include <gtest/gtest.h>

#include "05_generators/fetch.hpp"
#include "tests/support/epoll_refusal.hpp"

TEST(FetchLoop, FailsARequestWhoseSocketEpollRefusesWithLimitAndGoesOn) {
    using sixways::testing_support::expect_a_refused_socket_fails_only_its_request;
    expect_a_refused_socket_fails_only_its_request(&sixways::generators::fetch_all);
}

TEST(FetchLoop, ARequestCostsOneAddAndOneModAndNoDel) {
    sixways::testing_support::expect_one_add_and_one_mod_per_request(&sixways::generators::fetch_all);
}
