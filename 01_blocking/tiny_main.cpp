// 01_tiny [N] [--url URL] [--json] [--trace FILE]: stage 01's idea in one file (tiny.cpp), with no
// deadline, so --timeout is refused, and one request at a time, so --concurrency is too.
#include "01_blocking/tiny.hpp"
#include "common/cli.hpp"

int main(int argc, char** argv) {
    using namespace sixways;
    const StageInfo stage{
        .name = "01_tiny",
        .summary = "blocking sockets, one request after another, in one short file; no deadline: "
                   "a server that never answers is waited for until Ctrl-C",
        .fetch_all = &blocking::tiny::fetch_all,
        .one_at_a_time = true,
        .flags = {},
        .refused_options = {"--concurrency", "--timeout"},
        .refused_because = "it sends one request at a time and has no deadline; 01_blocking has a "
                           "deadline",
    };
    return run_stage(argc, argv, stage);
}
