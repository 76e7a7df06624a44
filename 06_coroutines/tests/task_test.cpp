#include <gtest/gtest.h>
#include "06_coroutines/task.hpp"
using namespace sixways::coroutines;
Task<int> answer() { co_return 42; }
Task<int> twice(Task<int> inner) { int x = co_await std::move(inner); co_return 2 * x; }
TEST(Smoke, Runs) {
    EventLoop loop;
    EXPECT_EQ(loop.run_until_complete(twice(answer())), 84);
}
