// When epoll refuses a socket, only that request fails, with `limit`, and the others go on.
// tests/support/epoll_refusal.cpp stands in for the kernel's epoll_ctl to make epoll refuse one.
#include <gtest/gtest.h>

#include "04_callbacks/fetch.hpp"
#include "tests/support/epoll_refusal.hpp"

TEST(Callbacks, FailsARequestWhoseSocketEpollRefusesWithLimitAndGoesOn) {
    using sixways::testing_support::expect_a_refused_socket_fails_only_its_request;
    expect_a_refused_socket_fails_only_its_request(&sixways::callbacks::fetch_all);
}
