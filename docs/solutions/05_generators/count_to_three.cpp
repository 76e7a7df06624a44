// Chapter 05's first generators, as a program to run before reading how they work: one that only
// hands values out, and one that is also sent values in.
#include <cstdio>

#include "05_generators/generator.hpp"

using sixways::generators::Generator;

Generator<int> count_to_three() {
    co_yield 1;
    co_yield 2;
    co_yield 3;
}

// Each co_yield hands out the total so far, and evaluates to the number send() passes in.
Generator<int, int> running_total() {
    int total = 0;
    for (;;) total += co_yield total;
}

int main() {
    Generator<int> counter = count_to_three();  // makes the frame; runs nothing
    while (counter.next()) std::printf("next: %d\n", counter.current());

    Generator<int, int> sum = running_total();
    sum.next();  // runs the body to its first co_yield, which has nothing to answer
    for (int n : {2, 40}) {
        sum.send(n);
        std::printf("send(%d): %d\n", n, sum.current());
    }
}
