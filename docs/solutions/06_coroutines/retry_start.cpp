// Chapter 06, part 2, exercise 3: write it yourself, and check it with the answer's tests.
//
// Yours: the body marked WRITE. As given, it compiles and every test fails. Build and run the tests
// (from the repository's top folder):
//     cmake --build build --target solution_06_retry_start -j2 && build/bin/solution_06_retry_start
// retry.hpp says what the function must do; retry.cpp is one answer.
#include <stdexcept>

#include "06_coroutines/fetch.hpp"
#include "retry.hpp"

namespace sixways::solutions {

using namespace sixways::coroutines;

Coroutine<Result> fetch_with_one_retry(EventLoop& loop, const Request& request, const Options& options,
                                       Duration pause) {
    // WRITE: fetch with stage 06's fetch(loop, request, options); if the result is not ok(), wait
    // `pause` without blocking the loop, and fetch once more. Then delete the two lines below.
    throw std::logic_error("fetch_with_one_retry: not written yet");
    co_return Result{};
}

}  // namespace sixways::solutions
