// --trace FILE: the run as a timeline, in the Chrome trace-event format, so it opens in Perfetto
// (ui.perfetto.dev) or chrome://tracing. Where the report gives totals, the timeline shows where the
// time went: stage 01's requests one after another, stage 04's all waiting at once, stage 03's
// connects bunched up while the loop spins.
//
// The file is one JSON object {"traceEvents": [...]} of "complete" events (ph "X", ts and dur in
// microseconds from the start of the run), all in process 1:
//
//   track 0         "resolve": the one getaddrinfo before any request
//   tracks 1, 2...  "lane 1", "lane 2"...: requests packed into lanes (below); in each lane a span
//                   "request K" covers K's whole life, and under it one span per phase it reached:
//                   connect (start -> connected), send (-> sent), wait (-> first byte),
//                   receive (-> done)
//   next track      "loop" (stages 04, 05, 06): each turn, an "epoll_wait" span for the time it
//                   slept (args: events), then a "turn K" span while the turn ran (args: events,
//                   and how many callbacks, resumes or steps ran)
//   next track      "task steps" (stage 06): each step of a task, named by the task (args: the
//                   frame it resumed, what woke it, what it suspended on)
//
// The loop's tracks come from the stages' --explain hooks (common/explain.hpp), which keep at most
// explain::max_records turns and as many steps; a track that was cut says so in its name. After
// Ctrl-C they are left out: the loop was still running.
//
// A failed request ends in the phase it failed in, and that span and the request's carry the error
// in their args (and chrome://tracing's red, "cname": "terrible").
//
// Why lanes and not one track per request: 10,000 tracks are 10,000 rows to scroll through, most of
// them nearly empty when requests run a few at a time. A request goes into the lowest-numbered lane
// that is free when it starts, so the number of lanes is the most requests that were in flight at
// once (the report's "concurrency"): stage 01 fills a single lane, `--concurrency 10` ten, and all
// at once as many as there were requests, because then that is the picture.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "common/duration.hpp"
#include "common/explain.hpp"
#include "common/fetch.hpp"

namespace sixways {

struct TraceRun {
    std::string stage;                // "04_callbacks": names the process in the viewer
    std::string url;
    std::size_t requests = 0;         // asked for (after Ctrl-C, more than the results that finished)
    Clock::time_point resolve_start;
    Clock::time_point resolve_done;
    std::string resolve_error;        // empty when the name resolved
    explain::LoopTrace loop;          // the loop's turns and task steps, if the stage recorded any
};

// The lane (1, 2, ...) of each request, in request order; 0 for a request that never started (its
// Timing.start was not reached: a failed resolve, or unfinished after Ctrl-C). A request whose done
// equals the next one's start hands its lane over, as the report's concurrency counts it.
std::vector<std::size_t> pack_into_lanes(const std::vector<Result>& results);

// The whole trace file. results[i] is request i; requests that never started are left out.
std::string format_trace(const TraceRun& run, const std::vector<Result>& results);

}  // namespace sixways
