// 05_generators [N] [--url URL] [--concurrency C] [--timeout DURATION] [--json] [--trace FILE]
//               [--split]: one generator per request, resumed by an epoll loop.
#include "05_generators/fetch.hpp"
#include "common/cli.hpp"

int main(int argc, char** argv) {
    using namespace sixways;
    bool split = false;
    const StageInfo stage{
        .name = "05_generators",
        .summary = "one generator per request, resumed by an epoll loop when its socket is ready",
        .fetch_all = [&split](const std::vector<Request>& requests, const Options& options) {
            const generators::FetchOne fetch =
                split ? &generators::fetch_one_split : &generators::fetch_one;
            return generators::run_fetches(requests, options, fetch);
        },
        .one_at_a_time = false,
        .narrates = true,
        .flags = {{"--split", "run the fetch split into sub-generators (fetch_split.cpp)", &split}},
    };
    return run_stage(argc, argv, stage);
}
