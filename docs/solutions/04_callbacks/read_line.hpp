// Exercise 4 of chapter 04: one read with a deadline, written as callbacks on stage 04's EventLoop.
//
//   read_line(loop, fd, 2s, [](LineOutcome outcome) { ... });
//   loop.run();
//
// It reads from `fd` until a '\n' arrives, the deadline passes, the peer closes or recv() fails,
// and calls `done` exactly once with what happened. Like the Fetcher, it is a few callbacks and an
// object that carries their state from one to the next.
#pragma once

#include <functional>
#include <string>

#include "04_callbacks/event_loop.hpp"
#include "common/duration.hpp"

namespace sixways::solutions {

// What read_line reports, once.
struct LineOutcome {
    std::string line;   // the line without its "\n" (and without a "\r" just before it)
    std::string error;  // empty when a line was read; else "timeout", "closed" or "recv: <reason>"
};

// `fd` must be a connected, non-blocking stream socket that `loop` does not watch yet. The caller
// keeps it and closes it: when `done` runs, read_line has removed its reader and cancelled its
// timer, so the loop has nothing of it left. Bytes that arrive after the '\n' in the same recv()
// are dropped (a real reader would keep them for the next line). Throws std::system_error, and
// calls nothing, if epoll refuses the descriptor.
void read_line(callbacks::EventLoop& loop, int fd, Duration timeout,
               std::function<void(LineOutcome)> done);

}  // namespace sixways::solutions
