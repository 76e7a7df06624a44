// Chapter 06, part 2, exercise 1: a task's stack of frames, checked. Built twice: with step.hpp
// (the answer), where every test passes, and with step_start.hpp (what you write in), where they
// fail until CoroutineAwaiter and the step loop are written.
#include STEP_HEADER

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace {

using step::Coroutine;
using step::pause;
using step::Task;

// Steps the task until it is done, at most `limit` times (a step that is not written never
// finishes it). Returns how many steps it took, or 0 if it did not finish.
template <class T>
int run(Task<T>& task, int limit = 100) {
    for (int steps = 1; steps <= limit; ++steps) {
        task.step();
        if (task.done()) return steps;
    }
    return 0;
}

Coroutine<int> twice_after_a_pause(int x) {
    co_await pause;
    co_return 2 * x;
}

Coroutine<int> sum_of_two() {
    const int a = co_await twice_after_a_pause(1);
    const int b = co_await twice_after_a_pause(20);
    co_return a + b;
}

TEST(Step, CoAwaitOnACoroutineGivesItsCoReturnValue) {
    Task<int> task(sum_of_two());
    ASSERT_EQ(run(task), 3);  // one step up to each pause, and one from the last pause to the end
    EXPECT_EQ(task.result(), 42);
}

TEST(Step, AStepEndsAtAPauseWithTheAwaitedCoroutineOnTop) {
    Task<int> task(sum_of_two());
    EXPECT_EQ(task.frames(), 1u);
    task.step();
    EXPECT_FALSE(task.done());
    EXPECT_EQ(task.frames(), 2u);  // sum_of_two, and twice_after_a_pause on top
}

Coroutine<int> fail_after_a_pause() {
    co_await pause;
    throw std::runtime_error("refused");
}

Coroutine<std::string> catch_it() {
    try {
        co_await fail_after_a_pause();
    } catch (const std::runtime_error& error) {
        co_return std::string("caught: ") + error.what();
    }
    co_return "not thrown";
}

TEST(Step, AnExceptionLeavesTheChildAndIsRethrownAtTheParentsCoAwait) {
    Task<std::string> task(catch_it());
    ASSERT_EQ(run(task), 2);
    EXPECT_EQ(task.result(), "caught: refused");
}

Coroutine<int> pass_it_on() {
    co_return co_await fail_after_a_pause();
}

TEST(Step, AnExceptionThatNobodyCatchesComesOutOfTheTasksResult) {
    Task<int> task(pass_it_on());
    ASSERT_EQ(run(task), 2);
    EXPECT_THROW(task.result(), std::runtime_error);
}

// Where the thread's stack is at the call: the deeper the calls, the farther from main's.
[[gnu::noinline]] std::uintptr_t stack_here() {
    return reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
}

std::uintptr_t stack_at_the_bottom = 0;

// Each level awaits the next; the last one notes where the stack is, and pauses. Had each child
// been resumed inside its parent's resume(), the calls would nest once per level; with every
// resume() made by the step, the deepest frame runs a few calls below the step.
Coroutine<int> depth(int levels) {
    if (levels == 0) {
        stack_at_the_bottom = stack_here();
        co_await pause;
        co_return 0;
    }
    co_return 1 + co_await depth(levels - 1);
}

TEST(Step, AwaitsAHundredThousandDeepWithoutGrowingTheThreadsStack) {
    Task<int> task(depth(100'000));
    const std::uintptr_t stack_at_the_step = stack_here();
    task.step();
    ASSERT_EQ(task.frames(), 100'001u);
    const std::uintptr_t apart = std::max(stack_at_the_step, stack_at_the_bottom) -
                                 std::min(stack_at_the_step, stack_at_the_bottom);
    EXPECT_LT(apart, 64u * 1024u);  // a few calls, not 100,000 of them
    ASSERT_EQ(run(task), 1);
    EXPECT_EQ(task.result(), 100'000);
}

}  // namespace
