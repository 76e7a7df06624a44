// Chapter 06, part 2's worked example: two fetches in a row under one deadline, the same with the
// fetches' own deadline shorter than the caller's, and three fetches at once with gather. Run it
// against the lab server: build/bin/solution_06_deadlines "$URL"
#include <cstdio>
#include <vector>

#include "06_coroutines/fetch.hpp"
#include "06_coroutines/gather.hpp"
#include "06_coroutines/wait_for.hpp"

using namespace sixways;
using namespace sixways::coroutines;
using namespace std::chrono_literals;

void show(const char* what, const Result& result) {
    if (result.ok()) std::printf("  %s: status %d\n", what, result.response.status);
    else std::printf("  %s: %s\n", what, result.error_message.c_str());
}

// fetch, saying so when a CancelledError comes out of it. (A catch handler may not co_await, but it
// may print and rethrow.)
Coroutine<Result> fetch_and_tell(EventLoop& loop, const Request& request, const Options& options) {
    try {
        co_return co_await fetch(loop, request, options);
    } catch (const CancelledError&) {
        std::printf("  a CancelledError came out of fetch\n");
        throw;
    }
}

// Two fetches in a row, inside the task that awaits this coroutine.
Coroutine<std::vector<Result>> two_in_a_row(EventLoop& loop, const Request& first, const Request& second,
                                            const Options& options) {
    std::vector<Result> results;
    results.push_back(co_await fetch_and_tell(loop, first, options));
    results.push_back(co_await fetch_and_tell(loop, second, options));
    co_return results;
}

Coroutine<void> demo(EventLoop& loop, const Request& page, const Request& hang) {
    Options hasty;
    hasty.timeout = 300ms;  // each fetch's own deadline, as --timeout 300ms sets it
    Options patient;        // 10 s, the default
    std::printf("fetch's 300 ms inside a wait_for of 1 s:\n");
    std::vector<Result> results = co_await wait_for(loop, two_in_a_row(loop, page, hang, hasty), 1s);
    show("first", results[0]);
    show("second", results[1]);

    std::printf("fetch's 10 s inside a wait_for of 1 s:\n");
    bool timed_out = false;
    try {
        results = co_await wait_for(loop, two_in_a_row(loop, page, hang, patient), 1s);
    } catch (const TimeoutError&) {
        timed_out = true;  // no co_await in a handler, and no need: print below
    }
    if (timed_out) {
        std::printf("  the caller's wait_for threw TimeoutError\n");
    } else {
        show("first", results[0]);
        show("second", results[1]);
    }

    std::printf("three at once, gathered:\n");
    std::vector<Task<Result>> tasks;
    tasks.push_back(loop.create_task(fetch(loop, page, hasty)));
    tasks.push_back(loop.create_task(fetch(loop, hang, hasty)));
    tasks.push_back(loop.create_task(fetch(loop, page, hasty)));
    results = co_await gather(loop, std::move(tasks));
    for (const Result& result : results) show("a task", result);
}

int main(int argc, char** argv) {
    const std::string base = argc > 1 ? argv[1] : "http://127.0.0.1:8080/";
    const Url page_url = parse_url(base + "page");
    const Url hang_url = parse_url(base + "fault/hang");
    // resolve() blocks: call it before the loop runs. Named locals, not temporaries inside a
    // co_await expression (g++ 12 may destroy such a temporary twice: GCC PR 107288).
    const Request page{page_url, resolve(page_url)};
    const Request hang{hang_url, resolve(hang_url)};
    EventLoop loop;
    loop.run_until_complete(demo(loop, page, hang));
}
