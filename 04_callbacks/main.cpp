// 04_callbacks [N] [--url URL] [--concurrency C] [--timeout DURATION] [--json] [--trace FILE]:
// one thread, an epoll loop, a callback per step of each request.
#include "04_callbacks/fetch.hpp"
#include "common/cli.hpp"

int main(int argc, char** argv) {
    const sixways::StageInfo stage{
        .name = "04_callbacks",
        .summary = "one thread; epoll says which socket is ready, and its next callback runs",
        .fetch_all = &sixways::callbacks::fetch_all,
        .one_at_a_time = false,
        .narrates = true,
        .flags = {},
    };
    return sixways::run_stage(argc, argv, stage);
}
