// 04_tiny [N] [--url URL] [--json] [--trace FILE]: stage 04's idea in one file (tiny.cpp), a plain
// epoll loop and the fetch as callbacks, with no deadline and no limit, so --timeout and
// --concurrency are refused.
#include "04_callbacks/tiny.hpp"
#include "common/cli.hpp"

int main(int argc, char** argv) {
    using namespace sixways;
    const StageInfo stage{
        .name = "04_tiny",
        .summary = "one thread; epoll says which socket is ready, and its callback runs, in one "
                   "short file; no deadline: a server that never answers is waited for until Ctrl-C",
        .fetch_all = &callbacks::tiny::fetch_all,
        .one_at_a_time = false,
        .flags = {},
        .refused_options = {"--concurrency", "--timeout"},
        .refused_because = "it has no deadline and no limit; 04_callbacks has both",
    };
    return run_stage(argc, argv, stage);
}
