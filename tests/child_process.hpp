// Runs a program the way a user would, for the conformance suite's command-line cases: its own
// process, stdin from /dev/null, stdout and stderr captured separately.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "common/duration.hpp"

namespace sixways::conformance {

struct ChildOutput {
    int exit_status = -1;   // the exit code, or 128 + the signal that ended it
    std::string out;        // everything written to stdout
    std::string err;        // everything written to stderr (on a terminal: as it reached it)
    bool killed = false;    // true when it outlived `bound` and was killed (SIGKILL, by its PID)
};

// How the child's standard streams are set up, when not as above.
struct ChildStreams {
    // Started with these closed, as by `program <&- >&- 2>&-`. Nothing is captured of a closed one.
    bool close_stdin = false;
    bool close_stdout = false;
    bool close_stderr = false;
    // stderr on a pseudo-terminal instead of a pipe, so that isatty(2) is true in the child, as in
    // a terminal window. What it writes there is captured in `err`; the terminal turns each "\n"
    // into "\r\n".
    bool stderr_on_terminal = false;
    // Called with the child's process id as soon as it has started, on the calling thread, before
    // its output is read: to start a thread that plays its peer, or that signals it.
    std::function<void(pid_t)> started;
};

// Runs `program` with `args` and waits at most `bound` for it to finish.
// Throws std::runtime_error if the program cannot be started at all.
ChildOutput run_program(const std::string& program, const std::vector<std::string>& args,
                        Duration bound, const ChildStreams& streams = {});

}  // namespace sixways::conformance
