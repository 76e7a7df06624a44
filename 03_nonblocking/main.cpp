// 03_nonblocking [N] [--url URL] [--concurrency C] [--timeout DURATION] [--json] [--trace FILE] [--one-at-a-time]:
// non-blocking sockets, polled in a busy loop.
#include "03_nonblocking/fetch.hpp"
#include "common/cli.hpp"

int main(int argc, char** argv) {
    bool one_at_a_time = false;  // set by parsing the command line, before the fetch starts
    const sixways::StageInfo stage{
        .name = "03_nonblocking",
        .summary = "non-blocking sockets, every one polled in a busy loop (it spins, and takes all the CPU it is given)",
        .fetch_all =
            [&one_at_a_time](const std::vector<sixways::Request>& requests,
                             const sixways::Options& options) {
                return one_at_a_time
                           ? sixways::nonblocking::fetch_all_one_at_a_time(requests, options)
                           : sixways::nonblocking::fetch_all(requests, options);
            },
        .one_at_a_time = false,
        .flags = {{"--one-at-a-time",
                   "spin on each request in turn, as the naive version does (as slow as stage 01)",
                   &one_at_a_time}},
    };
    return sixways::run_stage(argc, argv, stage);
}
