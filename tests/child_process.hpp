// Runs a program the way a user would, for the conformance suite's command-line cases: its own
// process, stdin from /dev/null, stdout and stderr captured separately.
#pragma once

#include <string>
#include <vector>

#include "common/duration.hpp"

namespace sixways::conformance {

struct ChildOutput {
    int exit_status = -1;   // the exit code, or 128 + the signal that ended it
    std::string out;        // everything written to stdout
    std::string err;        // everything written to stderr
    bool killed = false;    // true when it outlived `bound` and was killed (SIGKILL, by its PID)
};

// Runs `program` with `args` and waits at most `bound` for it to finish.
// Throws std::runtime_error if the program cannot be started at all.
ChildOutput run_program(const std::string& program, const std::vector<std::string>& args,
                        Duration bound);

}  // namespace sixways::conformance
