// Chapter 05's trap: a generator that keeps a reference to a temporary. It compiles without a
// warning, and its first next() reads a string that no longer exists: undefined behaviour. Built
// with the others, but not run as a test; run it under AddressSanitizer to see the read caught.
#include <cstdio>
#include <string>

#include "05_generators/generator.hpp"

using sixways::generators::Generator;

Generator<char> letters(const std::string& word) {  // the frame keeps the reference
    for (char c : word) co_yield c;
}

int main() {
    Generator<char> g = letters(std::string(40, 'x'));  // the temporary dies at the end of this line
    while (g.next()) std::putchar(g.current());         // reads it: undefined behaviour
    std::putchar('\n');
}
