// 03_tiny [N] [--url URL] [--json] [--trace FILE]: stage 03's idea in one file (tiny.cpp), with no
// deadline and no limit on the requests in flight, so --timeout and --concurrency are refused.
#include "03_nonblocking/tiny.hpp"
#include "common/cli.hpp"

int main(int argc, char** argv) {
    using namespace sixways;
    const StageInfo stage{
        .name = "03_tiny",
        .summary = "non-blocking sockets, every one polled in a busy loop that never sleeps, in "
                   "one short file; no deadline: a server that never answers is waited for until "
                   "Ctrl-C",
        .fetch_all = &nonblocking::tiny::fetch_all,
        .one_at_a_time = false,
        .flags = {},
        .refused_options = {"--concurrency", "--timeout"},
        .refused_because = "it has no deadline and no limit; 03_nonblocking has both",
    };
    return run_stage(argc, argv, stage);
}
