// Descriptors 0, 1 and 2 before anything else opens one.
#pragma once

namespace sixways {

// Makes sure descriptors 0, 1 and 2 (stdin, stdout, stderr) are open, opening /dev/null on each
// one that is not. Call it first thing in main, before anything opens a file or a socket.
//
// Why: a program may be started with a standard stream closed (`prog >&-`, or by a careless parent
// process). The kernel hands out the lowest free number, so the first file or socket the program
// opens would then become "stdout": the report, printed to stdout, would go into a trace file and
// spoil its JSON, or into a connection to the server. On /dev/null it goes nowhere, as the person
// who closed stdout asked. If /dev/null cannot be opened (a bare container), the program says so
// on stderr if it can and exits with status 1: writing its output into its own sockets is worse.
void open_standard_streams();

}  // namespace sixways
