// Exercise 1: a generator of our own, and the order in which things happen. The chapter's ask()
// writes to std::cout; here it writes to a log, so that the test can check the order.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "05_generators/generator.hpp"

namespace {

using sixways::generators::Generator;

// Writes to the log when it is destroyed: a local of the frame, to see when the frame goes.
struct Noisy {
    std::vector<std::string>& log;
    ~Noisy() { log.push_back("~Noisy"); }
};

// The log is a reference parameter: the frame keeps the reference, so the vector must outlive the
// generator (each test's vector does).
Generator<std::string, int> ask(std::vector<std::string>& log) {
    Noisy noisy{log};
    log.push_back("body starts");
    const int a = co_yield "first number?";
    const int b = co_yield "second number?";
    log.push_back("body got " + std::to_string(a) + " and " + std::to_string(b));
    co_yield "sum is " + std::to_string(a + b);
    log.push_back("never written if closed at the last co_yield");
}

TEST(Exercise1, TheBodyRunsOnlyWhenResumedAndCloseRunsOnlyDestructors) {
    std::vector<std::string> log;
    auto g = ask(log);
    log.push_back("created");
    g.next();
    log.push_back("out: " + g.current());
    g.send(2);
    log.push_back("out: " + g.current());
    g.send(40);
    log.push_back("out: " + g.current());
    g.close();
    log.push_back(g.done() ? "closed, done" : "closed, not done");

    const std::vector<std::string> expected = {
        "created",                // lazy start: the call made the frame, nothing ran
        "body starts",            // the first next() ran the body to its first co_yield
        "out: first number?",
        "out: second number?",    // send(2): the first co_yield returned 2
        "body got 2 and 40",      // send(40): the second returned 40
        "out: sum is 42",
        "~Noisy",                 // close(): the frame's live local is destroyed...
        "closed, done",           // ...and no other line of the body ran
    };
    EXPECT_EQ(log, expected);
}

TEST(Exercise1, SendBeforeTheFirstNextThrowsLogicError) {
    std::vector<std::string> log;
    auto g = ask(log);
    EXPECT_THROW(g.send(1), std::logic_error);
    EXPECT_TRUE(log.empty());  // the body has not started: no co_yield was there to receive 1
}

TEST(Exercise1, DestroyingTheGeneratorAlsoDestroysTheFrame) {
    std::vector<std::string> log;
    {
        auto g = ask(log);
        g.next();
    }  // ~Generator calls close()
    const std::vector<std::string> expected = {"body starts", "~Noisy"};
    EXPECT_EQ(log, expected);
}

}  // namespace
