// --explain: stages 04, 05 and 06 say on stdout what their loop does, turn by turn, in their own
// terms (04: which callback runs; 05: which generator is resumed and what it yielded; 06: which
// future wakes which task, and which frame each step resumes and suspends in). Every line is one
// system call or one step of the code, so a run can be set beside `strace` and the source.
//
// The stages call the hooks below, one statement each, at the places where the loop waits (after
// epoll_wait), wakes (per event), runs (a callback, a resume, a step) and in the socket calls.
// Names are string literals. A hook is an inline test of one flag, set once by the command line
// before the fetch: without --explain it is a predictable branch, with no call, no allocation and
// no string built. All the formatting is in explain.cpp.
//
// The first `full_turns` turns are printed in full; after that only the turns are counted, and
// finish() says how many were left out. Every hook keeps errno as it found it: the stage's code
// reads errno right after the hook.
//
// With --trace the same hooks also record the loop for the timeline (common/trace.hpp): each turn
// (how long epoll_wait slept, how many events, how many callbacks, resumes or steps ran) and, for
// stage 06, each task step. At most `max_records` of each are kept; the rest are only counted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/duration.hpp"

namespace sixways::explain {

constexpr std::size_t full_turns = 40;
constexpr std::size_t max_records = 100'000;

// True with --explain or --trace: the one flag every hook tests. Set by the command line
// (common/cli.cpp, through start()) before the fetch starts, and never changed during it.
inline bool recording = false;

// Turns the hooks on: `narrate` prints the narration on stdout, `trace` records the loop.
void start(bool narrate, bool trace);

// One turn of the loop, for the timeline.
struct TurnRecord {
    Clock::time_point waited;     // epoll_wait was called (the time of the loop's last hook before)
    Clock::time_point woke;       // it returned
    Clock::time_point ran_until;  // the turn's last hook (its callbacks, resumes or steps ended)
    int events = 0;
    std::size_t ran = 0;          // callbacks (04), generator resumes (05) or task steps (06)
};

// One step of a stage 06 task, for the timeline.
struct StepRecord {
    Clock::time_point began;
    Clock::time_point ended;
    std::string task;          // "request 7"
    std::string resumes;       // the frame the step resumed: "receive_response"
    std::string woken_by;      // "fd 7 readable", "a callback", "its creation"
    std::string suspends_on;   // "sock_recv awaits the future of fd 7 readable", "done"
};

struct LoopTrace {
    std::vector<TurnRecord> turns;
    std::vector<StepRecord> steps;
    std::size_t turns_dropped = 0;  // beyond max_records
    std::size_t steps_dropped = 0;
};

// What was recorded, handed over once the fetch is done (empty without --trace).
LoopTrace take_trace();

namespace detail {
void woke(int events);
void event(int fd, std::uint32_t epoll_events);
void call(const char* name, int fd, long result);
void runs(const char* callback, int fd);
void resumes(std::size_t request, bool timed_out);
void yields(std::size_t request, int fd, bool writable);
void generator_done(std::size_t request);
void wakes(const std::string& task, std::uint64_t number, const char* frame, bool cancelled);
void step(const std::string& task, std::uint64_t number, const char* frame);
void awaits(const char* parent, const char* child);
void finishes(bool threw);
void returns(const char* parent);
void suspends(const char* frame);
void waits_for(int fd, bool writable);
}  // namespace detail

// ---- The loop (04, 05, 06) ----

// epoll_wait returned `events` (-1: interrupted). Starts a turn.
inline void woke(int events) {
    if (recording) detail::woke(events);
}
// One event of that batch: descriptor and epoll_event.events.
inline void event(int fd, std::uint32_t epoll_events) {
    if (recording) detail::event(fd, epoll_events);
}

// ---- System calls: `result` is what the call returned; errno is read when it is negative ----
inline void call(const char* name, int fd, long result) {
    if (recording) detail::call(name, fd, result);
}

// ---- Stage 04: a step of a request runs (a callback the loop calls, or one it calls) ----
inline void runs(const char* callback, int fd) {
    if (recording) detail::runs(callback, fd);
}

// ---- Stage 05: the loop resumes a request's generator; the generator yields, or ends ----
inline void resumes(std::size_t request, bool timed_out) {
    if (recording) detail::resumes(request, timed_out);
}
inline void yields(std::size_t request, int fd, bool writable) {
    if (recording) detail::yields(request, fd, writable);
}
inline void generator_done(std::size_t request) {
    if (recording) detail::generator_done(request);
}

// ---- Stage 06: tasks, frames and futures ----

// A task's next step is queued: its first one (frame null), or the future its frame `frame`
// awaits is done, or (`cancelled`) the task was cancelled, and the co_await it waits in will throw.
// `task` is its name, empty for an unnamed task, which is "Task-<number>".
inline void wakes(const std::string& task, std::uint64_t number, const char* frame, bool cancelled) {
    if (recording) detail::wakes(task, number, frame, cancelled);
}
// A step begins: it resumes the task's top frame, `frame`.
inline void step(const std::string& task, std::uint64_t number, const char* frame) {
    if (recording) detail::step(task, number, frame);
}
// Inside a step: `parent` co_awaits the coroutine `child`, which the step resumes next.
inline void awaits(const char* parent, const char* child) {
    if (recording) detail::awaits(parent, child);
}
// Inside a step: the top frame has finished, by an exception if `threw`. Then returns() is called.
inline void finishes(bool threw) {
    if (recording) detail::finishes(threw);
}
// Inside a step: the frame that finished is gone, and `parent` (null: none, the task is done) is
// on top, and takes its result or exception.
inline void returns(const char* parent) {
    if (recording) detail::returns(parent);
}
// The step ends: `frame` awaits a future that is not done.
inline void suspends(const char* frame) {
    if (recording) detail::suspends(frame);
}
// A socket wait: a future that a reader (or writer) of fd completes.
inline void waits_for(int fd, bool writable) {
    if (recording) detail::waits_for(fd, writable);
}

// After the fetch: "… K more turns", if turns were left out. The command line calls it.
void finish();

}  // namespace sixways::explain
