// solution_03_napping [N] [--url URL] [--concurrency C] [--timeout DURATION] [--json]
//                     [--nap DURATION]:
// chapter 03's exercise 5 as a command line. The same options and report as 03_nonblocking, plus
// --nap (default 1ms): how long the loop sleeps after each pass.
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "common/cli.hpp"
#include "common/duration.hpp"
#include "docs/solutions/03_nonblocking/napping_fetch.hpp"

int main(int argc, char** argv) {
    // Takes --nap DURATION (or --nap=DURATION) out of the arguments; run_stage parses the rest.
    sixways::Duration nap = std::chrono::milliseconds(1);
    std::vector<char*> rest{argv[0]};
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        std::string_view value;
        if (arg == "--nap" && i + 1 < argc) {
            value = argv[++i];
        } else if (arg.starts_with("--nap=")) {
            value = arg.substr(6);
        } else if (arg == "--nap") {
            std::fprintf(stderr, "solution_03_napping: --nap needs a duration (2, 2.5s, 250ms)\n");
            return 2;
        } else {
            rest.push_back(argv[i]);
            continue;
        }
        try {
            nap = sixways::parse_duration(value);
        } catch (const sixways::DurationError& error) {
            std::fprintf(stderr, "solution_03_napping: --nap: %s\n", error.what());
            return 2;
        }
    }
    const sixways::StageInfo stage{
        .name = "solution_03_napping",
        .summary = "stage 03's loop, sleeping --nap DURATION (default 1ms) after every pass",
        .fetch_all =
            [nap](const std::vector<sixways::Request>& requests, const sixways::Options& options) {
                return sixways::solutions::fetch_all_napping(requests, options, nap);
            },
        .one_at_a_time = false,
        .flags = {},
    };
    return sixways::run_stage(static_cast<int>(rest.size()), rest.data(), stage);
}
