// Part 1's exercise 3: a task that awaits a task it owns, on tiny's runtime. It includes tiny.cpp
// itself, so that it runs whatever tiny.cpp says now: with set_result queueing the callbacks it
// prints "status 200"; with set_result running them at once, see the answer.
#include <cstdio>

#include "06_coroutines/tiny.cpp"

using namespace sixways;
using namespace sixways::coroutines::tiny;

Coroutine<Result> parent(EventLoop& loop, const Request& request, const Options& options) {
    Task<Result> child(loop, fetch(loop, request, options));  // lives in this frame
    Result result = co_await child;                          // a Task is a Future
    co_return result;                                        // this frame, and `child`, end here
}

int main(int argc, char** argv) {
    if (argc != 2) return 2;  // usage: solution_06_inline_callbacks URL
    const Url url = parse_url(argv[1]);
    const Request request{url, resolve(url)};  // named first: see part 2 on g++ 12
    const Options options;
    EventLoop loop;
    Task<Result> task(loop, parent(loop, request, options));
    loop.run();
    std::printf("status %d\n", task.result().response.status);
}
