// The command line every stage shares, and the run around a stage's fetch_all: parse, resolve once,
// fetch, report. None of this is the lesson; a stage's main.cpp is a call to run_stage.
//
//   NN_name [N] [--url URL] [--concurrency C] [--timeout DURATION] [--json] [--trace FILE]
//           [--explain] [--help]
//
// --explain reaches a stage through one mechanism: the stage says it narrates (StageInfo::narrates),
// and run_stage calls explain::start before the fetch, which turns the stage's hooks on.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/duration.hpp"
#include "common/fetch.hpp"
#include "common/url.hpp"

namespace sixways {

// A yes/no option of one stage only, e.g. 03's --one-at-a-time.
struct StageFlag {
    std::string name;  // "--one-at-a-time"
    std::string help;  // one line for --help
    bool* value;       // set to true when given
};

struct StageInfo {
    std::string name;              // "01_blocking": the binary's name and the report's "stage"
    std::string summary;           // one line for --help: how this stage waits
    FetchAll fetch_all;
    bool one_at_a_time = false;    // true for 01: --concurrency is accepted but always 1
    bool narrates = false;         // true for 04, 05, 06: --explain tells their loop's turns
    std::vector<StageFlag> flags;  // this stage's own options
    // Shared options this stage does not offer: using one is bad usage, and the message gives
    // `refused_because`; --help lists them apart. 06_tiny has no deadline and no limit, so it
    // refuses {"--concurrency", "--timeout"}. Given defaults, so that a stage which refuses
    // nothing need not name them.
    std::vector<std::string> refused_options = {};
    std::string refused_because = {};  // "it has no timeouts and no limit; 06_coroutines has both"
};

struct CliOptions {
    std::size_t requests = 10;
    Url url;                       // default http://127.0.0.1:8080/
    std::size_t concurrency = 0;   // 0: all at once
    Duration timeout = std::chrono::seconds(10);
    bool json = false;
    bool explain = false;          // --explain: narrate the loop on stdout (common/explain.hpp)
    std::string trace_path;        // --trace FILE: where to write the timeline (empty: none)
    bool help = false;
};

// Thrown for bad usage; what() says what is wrong ("N must be a whole number >= 0, not '-3'").
class UsageError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Parses the arguments after the program name. Sets the stage's flags. Throws UsageError.
CliOptions parse_cli(const std::vector<std::string>& args, const StageInfo& stage);

std::string usage_text(const StageInfo& stage);

// The whole program: parse, raise the descriptor limit, resolve once, run fetch_all with at most as
// many requests in flight as that limit allows and with progress on stderr (only on a terminal,
// and not with --json or --explain), print the report, and write the timeline for --trace (see
// common/trace.hpp). Ctrl-C prints the partial report (and the partial timeline) and exits 130.
// When memory runs out, the requests without a result fail with `limit` and the report is printed.
// Returns the exit status: 0 every request got a response, 1 some failed (or the timeline could not
// be written), 2 bad usage (a --trace file that cannot be created included).
int run_stage(int argc, char** argv, const StageInfo& stage);

}  // namespace sixways
