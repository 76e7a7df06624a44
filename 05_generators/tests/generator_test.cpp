// The Generator type on its own: when the body runs, what goes in and out of co_yield, and who
// destroys what. Lifetimes are counted with a small `counted` type, so a leaked or twice-destroyed
// local fails a test (and ASan reports it).
#include "05_generators/generator.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace sixways::generators {
namespace {

// Counts its constructions and destructions.
struct counted {
    static inline int constructed = 0;
    static inline int destroyed = 0;
    static int alive() { return constructed - destroyed; }
    static void reset() { constructed = destroyed = 0; }

    counted() { ++constructed; }
    counted(const counted&) { ++constructed; }
    ~counted() { ++destroyed; }
};

class GeneratorTest : public testing::Test {
protected:
    void SetUp() override { counted::reset(); }
};

Generator<int> count_to(int n) {
    for (int i = 1; i <= n; ++i) co_yield i;
}

TEST_F(GeneratorTest, DoesNotRunUntilFirstResumed) {
    bool ran = false;
    auto body = [](bool& ran) -> Generator<int> {
        ran = true;
        co_yield 1;
    };
    Generator<int> generator = body(ran);
    EXPECT_FALSE(ran);
    EXPECT_FALSE(generator.done());
    EXPECT_TRUE(generator.next());
    EXPECT_TRUE(ran);
}

TEST_F(GeneratorTest, NextRunsToTheNextCoYieldAndCurrentHoldsItsValue) {
    Generator<int> generator = count_to(2);
    ASSERT_TRUE(generator.next());
    EXPECT_EQ(generator.current(), 1);
    ASSERT_TRUE(generator.next());
    EXPECT_EQ(generator.current(), 2);
    EXPECT_FALSE(generator.next());
    EXPECT_TRUE(generator.done());
}

Generator<std::string, int> echo_sums() {
    int total = 0;
    for (;;) {
        const int sent = co_yield "total " + std::to_string(total);
        total += sent;
    }
}

TEST_F(GeneratorTest, SendDeliversTheValueToTheSuspendedCoYield) {
    Generator<std::string, int> generator = echo_sums();
    ASSERT_TRUE(generator.next());
    EXPECT_EQ(generator.current(), "total 0");
    ASSERT_TRUE(generator.send(5));
    EXPECT_EQ(generator.current(), "total 5");
    ASSERT_TRUE(generator.send(37));
    EXPECT_EQ(generator.current(), "total 42");
}

TEST_F(GeneratorTest, NextSendsADefaultValue) {
    Generator<std::string, int> generator = echo_sums();
    generator.next();
    generator.send(7);
    generator.next();  // sends int{}: adds 0
    EXPECT_EQ(generator.current(), "total 7");
}

TEST_F(GeneratorTest, SendBeforeTheFirstNextIsAnError) {
    Generator<std::string, int> generator = echo_sums();
    EXPECT_THROW(generator.send(1), std::logic_error);
    EXPECT_TRUE(generator.next());  // the generator is still usable
    EXPECT_EQ(generator.current(), "total 0");
}

TEST_F(GeneratorTest, AFinishedGeneratorReportsDone) {
    Generator<int> generator = count_to(1);
    EXPECT_TRUE(generator.next());
    EXPECT_FALSE(generator.done());
    EXPECT_FALSE(generator.next());
    EXPECT_TRUE(generator.done());
}

TEST_F(GeneratorTest, ResumingAFinishedGeneratorIsAnError) {
    Generator<int> generator = count_to(0);
    EXPECT_FALSE(generator.next());
    EXPECT_THROW(generator.next(), std::logic_error);
}

Generator<int> hold_two_locals() {
    counted first;
    co_yield 1;
    counted second;
    co_yield 2;
}

TEST_F(GeneratorTest, DestroyingASuspendedGeneratorRunsTheDestructorsOfItsLocals) {
    {
        Generator<int> generator = hold_two_locals();
        generator.next();
        generator.next();
        EXPECT_EQ(counted::alive(), 2);
    }
    EXPECT_EQ(counted::constructed, 2);
    EXPECT_EQ(counted::destroyed, 2);
}

TEST_F(GeneratorTest, CloseDestroysOnlyTheLocalsAliveAtTheSuspensionPoint) {
    Generator<int> generator = hold_two_locals();
    generator.next();  // suspended after `first`, before `second` exists
    EXPECT_EQ(counted::alive(), 1);
    generator.close();
    EXPECT_TRUE(generator.done());
    EXPECT_EQ(counted::constructed, 1);
    EXPECT_EQ(counted::destroyed, 1);
}

TEST_F(GeneratorTest, AGeneratorThatNeverStartedDestroysItsParameters) {
    auto body = [](counted) -> Generator<int> { co_yield 1; };
    {
        Generator<int> generator = body(counted{});
        EXPECT_EQ(counted::alive(), 1);  // the frame's copy of the parameter
    }
    EXPECT_EQ(counted::alive(), 0);
}

TEST_F(GeneratorTest, LocalsAreDestroyedWhenTheBodyReturnsBeforeTheFrameIsFreed) {
    Generator<int> generator = hold_two_locals();
    while (generator.next()) {
    }
    EXPECT_TRUE(generator.done());
    EXPECT_EQ(counted::alive(), 0);
}

Generator<int> throw_after_one() {
    counted local;
    co_yield 1;
    throw std::runtime_error("broken");
}

TEST_F(GeneratorTest, AnExceptionInTheBodyReachesTheCallerOfNext) {
    Generator<int> generator = throw_after_one();
    ASSERT_TRUE(generator.next());
    EXPECT_THROW(
        {
            try {
                generator.next();
            } catch (const std::runtime_error& error) {
                EXPECT_STREQ(error.what(), "broken");
                throw;
            }
        },
        std::runtime_error);
    EXPECT_TRUE(generator.done());
    EXPECT_EQ(counted::alive(), 0);
}

Generator<int, int> throw_on_negative() {
    for (;;) {
        const int sent = co_yield 0;
        if (sent < 0) throw std::invalid_argument("negative");
    }
}

TEST_F(GeneratorTest, AnExceptionInTheBodyReachesTheCallerOfSend) {
    Generator<int, int> generator = throw_on_negative();
    generator.next();
    EXPECT_TRUE(generator.send(1));
    EXPECT_THROW(generator.send(-1), std::invalid_argument);
    EXPECT_TRUE(generator.done());
}

TEST_F(GeneratorTest, RangeForVisitsEveryYieldedValue) {
    std::vector<int> seen;
    for (int value : count_to(4)) seen.push_back(value);
    EXPECT_EQ(seen, (std::vector<int>{1, 2, 3, 4}));
}

TEST_F(GeneratorTest, RangeForOverAnEmptyGeneratorVisitsNothing) {
    int visits = 0;
    for (int value : count_to(0)) visits += value + 1;
    EXPECT_EQ(visits, 0);
}

TEST_F(GeneratorTest, MoveLeavesTheSourceEmpty) {
    Generator<int> source = count_to(3);
    source.next();
    Generator<int> target = std::move(source);
    EXPECT_TRUE(source.done());  // empty: the promised state after a move
    EXPECT_THROW(source.next(), std::logic_error);
    ASSERT_FALSE(target.done());
    EXPECT_EQ(target.current(), 1);
    EXPECT_TRUE(target.next());
    EXPECT_EQ(target.current(), 2);
}

TEST_F(GeneratorTest, MoveAssignmentDestroysTheFrameItReplaces) {
    Generator<int> generator = hold_two_locals();
    generator.next();
    EXPECT_EQ(counted::alive(), 1);
    generator = count_to(1);
    EXPECT_EQ(counted::alive(), 0);
    EXPECT_TRUE(generator.next());
    EXPECT_EQ(generator.current(), 1);
}

TEST_F(GeneratorTest, AMovedGeneratorCanBeSentToWithoutAnotherNext) {
    Generator<std::string, int> source = echo_sums();
    source.next();
    Generator<std::string, int> target = std::move(source);
    EXPECT_TRUE(target.send(3));
    EXPECT_EQ(target.current(), "total 3");
}

TEST_F(GeneratorTest, EachGeneratorKeepsItsOwnLocals) {
    Generator<int> a = count_to(3);
    Generator<int> b = count_to(3);
    a.next();
    a.next();
    b.next();
    EXPECT_EQ(a.current(), 2);
    EXPECT_EQ(b.current(), 1);
}

}  // namespace
}  // namespace sixways::generators
