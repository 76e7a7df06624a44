// 02_threads [N] [--url URL] [--concurrency C] [--timeout DURATION] [--json] [--trace FILE]: a thread per request.
#include "02_threads/fetch.hpp"
#include "common/cli.hpp"

int main(int argc, char** argv) {
    const sixways::StageInfo stage{
        .name = "02_threads",
        .summary = "a POSIX thread per request (with --concurrency C, a pool of that many), "
                   "each with blocking sockets",
        .fetch_all = &sixways::threads::fetch_all,
        .one_at_a_time = false,
        .flags = {},
    };
    return sixways::run_stage(argc, argv, stage);
}
