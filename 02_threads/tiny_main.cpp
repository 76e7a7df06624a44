// 02_tiny [N] [--url URL] [--json] [--trace FILE]: stage 02's idea in one file (tiny.cpp), with no
// deadline and no pool of threads, so --timeout and --concurrency are refused.
#include "02_threads/tiny.hpp"
#include "common/cli.hpp"

int main(int argc, char** argv) {
    using namespace sixways;
    const StageInfo stage{
        .name = "02_tiny",
        .summary = "a thread per request, each with blocking sockets, in one short file; no "
                   "deadline: a server that never answers is waited for until Ctrl-C",
        .fetch_all = &threads::tiny::fetch_all,
        .one_at_a_time = false,
        .flags = {},
        .refused_options = {"--concurrency", "--timeout"},
        .refused_because = "it has no deadline and no pool of threads; 02_threads has both",
    };
    return run_stage(argc, argv, stage);
}
