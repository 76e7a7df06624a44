// 05_tiny [N] [--url URL] [--json] [--trace FILE]: stage 05's idea in one file (tiny.cpp), the
// fetch as a generator resumed by a plain epoll loop, with no deadline and no limit, so --timeout
// and --concurrency are refused.
#include "05_generators/tiny.hpp"
#include "common/cli.hpp"

int main(int argc, char** argv) {
    using namespace sixways;
    const StageInfo stage{
        .name = "05_tiny",
        .summary = "one generator per request, resumed by an epoll loop when its socket is ready, in "
                   "one short file; no deadline: a server that never answers is waited for until Ctrl-C",
        .fetch_all = &generators::tiny::fetch_all,
        .one_at_a_time = false,
        .flags = {},
        .refused_options = {"--concurrency", "--timeout"},
        .refused_because = "it has no deadline and no limit; 05_generators has both",
    };
    return run_stage(argc, argv, stage);
}
