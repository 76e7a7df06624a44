// 06_coroutines [N] [--url URL] [--concurrency C] [--timeout DURATION] [--json] [--trace FILE]
#include "06_coroutines/fetch.hpp"
#include "common/cli.hpp"

int main(int argc, char** argv) {
    using namespace sixways;
    const StageInfo stage{
        .name = "06_coroutines",
        .summary = "one coroutine per request on a mini asyncio: event loop, futures, tasks, gather",
        .fetch_all = &coroutines::fetch_all,
        .one_at_a_time = false,
        .narrates = true,
        .flags = {},
    };
    return run_stage(argc, argv, stage);
}
