// When epoll refuses a socket, the loop closes that fetch and only its request fails, with `limit`;
// the others go on. tests/support/epoll_refusal.cpp stands in for the kernel's epoll_ctl to make
// epoll refuse one.
#include <gtest/gtest.h>

#include "05_generators/fetch.hpp"
#include "tests/support/epoll_refusal.hpp"

TEST(FetchLoop, FailsARequestWhoseSocketEpollRefusesWithLimitAndGoesOn) {
    using sixways::testing_support::expect_a_refused_socket_fails_only_its_request;
    expect_a_refused_socket_fails_only_its_request(&sixways::generators::fetch_all);
}
