// solution_02_std_threads [N] [--url URL] [--timeout DURATION] [--json] [--trace FILE]:
// chapter 02's exercise 4 as a command line, with the stages' options (all but --concurrency) and
// report: one std::thread per request, each with the default stack, to compare with 02_threads
// (under `ulimit -v`, for instance).
#include "common/cli.hpp"
#include "docs/solutions/02_threads/std_thread_fetchers.hpp"

int main(int argc, char** argv) {
    const sixways::StageInfo stage{
        .name = "solution_02_std_threads",
        .summary = "a std::thread per request, each with the default stack, running stage 01's "
                   "blocking fetch",
        .fetch_all = &sixways::solutions::fetch_all_with_std_threads,
        .one_at_a_time = false,
        .flags = {},
        .refused_options = {"--concurrency"},
        .refused_because = "it starts a thread for every request; 02_threads has a pool",
    };
    return sixways::run_stage(argc, argv, stage);
}
