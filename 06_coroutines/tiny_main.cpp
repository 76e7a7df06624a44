// 06_tiny [N] [--url URL] [--json] [--trace FILE]: stage 06's minimal runtime (tiny.cpp), no
// timeouts and no limit, so --timeout and --concurrency are refused.
#include "06_coroutines/tiny.hpp"
#include "common/cli.hpp"

int main(int argc, char** argv) {
    using namespace sixways;
    const StageInfo stage{
        .name = "06_tiny",
        .summary = "one coroutine per request on a minimal runtime in one file: a Future, a Task "
                   "and an epoll loop; no deadline: a server that never answers is waited for "
                   "until Ctrl-C",
        .fetch_all = &coroutines::tiny::fetch_all,
        .one_at_a_time = false,
        .flags = {},
        .refused_options = {"--concurrency", "--timeout"},
        .refused_because = "it has no timeouts and no limit; 06_coroutines has both",
    };
    return run_stage(argc, argv, stage);
}
