// Chapter 06, part 2, exercise 6: write it yourself, and check it with the answer's tests.
//
// Yours: the body marked WRITE. As given, it compiles and every test fails. Build and run the tests
// (from the repository's top folder):
//     cmake --build build --target solution_06_first_answer_start -j2 && build/bin/solution_06_first_answer_start
// first_answer.hpp says what the function must do; first_answer.cpp is one answer.
#include <stdexcept>

#include "06_coroutines/fetch.hpp"
#include "first_answer.hpp"

namespace sixways::solutions {

using namespace sixways::coroutines;

Coroutine<Result> first_answer(EventLoop& loop, const Request& first, const Request& second, const Options& options) {
    // WRITE: fetch `first` and `second` side by side, each in a task of its own; return the first
    // result that is ok(), once the other fetch is cancelled and finished; if both fail, return the
    // failure that came last. Then delete the two lines below.
    throw std::logic_error("first_answer: not written yet");
    co_return Result{};
}

}  // namespace sixways::solutions
