// The trace file: each request's Timing turned into spans on a timeline (see trace.hpp).
#include "common/trace.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <queue>
#include <utility>

#include "common/report.hpp"

namespace sixways {

namespace {

// A phase that was never reached keeps the clock's epoch (see Timing).
bool reached(Clock::time_point t) { return t != Clock::time_point{}; }

// When the request stopped occupying its lane: done, or for a result without one (which a final
// result should not be) the last moment it reached.
Clock::time_point end_of(const Timing& t) {
    Clock::time_point end = t.start;
    for (Clock::time_point moment : {t.connected, t.sent, t.first_byte, t.done}) {
        if (reached(moment)) {
            end = std::max(end, moment);
        }
    }
    return end;
}

// One span as a trace event. Times are whole nanoseconds from the origin, written as microseconds
// with three decimals: exact, so a phase ends precisely where the next begins and inside its request.
class EventWriter {
public:
    explicit EventWriter(Clock::time_point origin) : origin_(origin) {}

    // `args` is the inside of a JSON object ("\"request\":3"); `failed` colours the span red.
    void span(const char* category, const std::string& name, std::size_t track,
              Clock::time_point begin, Clock::time_point end, const std::string& args,
              bool failed) {
        end = std::max(end, begin);  // a reordered clock reading never makes a negative span
        text_ += ",\n{\"name\":" + json_string(name) + ",\"cat\":\"" + category +
                 "\",\"ph\":\"X\",\"pid\":1,\"tid\":" + std::to_string(track) +
                 ",\"ts\":" + microseconds(begin - origin_) +
                 ",\"dur\":" + microseconds(end - begin);
        if (failed) {
            text_ += ",\"cname\":\"terrible\"";
        }
        text_ += ",\"args\":{" + args + "}}";
    }

    // Metadata ("M") events name the process and the tracks in the viewer.
    void name(const char* what, std::size_t track, const std::string& name) {
        text_ += std::string(text_.empty() ? "\n" : ",\n") + "{\"name\":\"" + what +
                 "\",\"ph\":\"M\",\"pid\":1,\"tid\":" + std::to_string(track) +
                 ",\"args\":{\"name\":" + json_string(name) + "}}";
    }

    std::string finish() { return "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[" + text_ + "\n]}\n"; }

private:
    static std::string microseconds(Clock::duration d) {
        long long ns = std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
        char text[32];
        std::snprintf(text, sizeof text, "%lld.%03lld", ns / 1000, ns % 1000);
        return text;
    }

    Clock::time_point origin_;
    std::string text_;
};

// The phases in order, each named by the moment that ends it (the previous one's end begins it).
struct Phase {
    const char* name;
    Clock::time_point Timing::*end;
};
constexpr Phase phases[] = {
    {"connect", &Timing::connected},
    {"send", &Timing::sent},
    {"wait", &Timing::first_byte},
    {"receive", &Timing::done},
};

void write_request(EventWriter& events, std::size_t index, std::size_t lane, const Result& result) {
    const Timing& t = result.timing;
    const std::string request = "\"request\":" + std::to_string(index);
    std::string outcome;
    if (result.ok()) {
        outcome = ",\"status\":" + std::to_string(result.response.status) +
                  ",\"bytes\":" + std::to_string(result.response.body_bytes);
    } else {
        outcome = ",\"error\":" + json_string(result.error_message) +
                  ",\"kind\":" + json_string(to_string(result.error));
    }
    events.span("request", "request " + std::to_string(index), lane, t.start, end_of(t),
                request + outcome, !result.ok());

    // Each phase the request completed, then, for a failed request, the one it failed in: from the
    // last moment it reached to done. A phase it never got to is left out.
    Clock::time_point begin = t.start;
    for (const Phase& phase : phases) {
        Clock::time_point end = t.*phase.end;
        if (reached(end)) {
            bool failed_here = !result.ok() && phase.end == &Timing::done;
            events.span("phase", phase.name, lane, begin, end,
                        failed_here ? request + outcome : request, failed_here);
            begin = end;
            continue;
        }
        if (!result.ok()) {
            events.span("phase", phase.name, lane, begin, end_of(t), request + outcome, true);
        }
        break;
    }
}

// The loop's track, and stage 06's task steps under it, after the lanes.
void write_loop(EventWriter& events, const explain::LoopTrace& loop, std::size_t track) {
    const auto cut = [](const char* name, std::size_t kept, std::size_t dropped) {
        return dropped == 0 ? std::string(name)
                            : std::string(name) + " (the first " + std::to_string(kept) + " of " +
                                  std::to_string(kept + dropped) + ")";
    };
    if (!loop.turns.empty()) {
        events.name("thread_name", track, cut("loop", loop.turns.size(), loop.turns_dropped));
        for (std::size_t i = 0; i < loop.turns.size(); ++i) {
            const explain::TurnRecord& turn = loop.turns[i];
            const std::string count = "\"events\":" + std::to_string(turn.events);
            events.span("loop", "epoll_wait", track, turn.waited, turn.woke, count, false);
            events.span("turn", "turn " + std::to_string(i + 1), track, turn.woke, turn.ran_until,
                        count + ",\"ran\":" + std::to_string(turn.ran), false);
        }
        ++track;
    }
    if (!loop.steps.empty()) {
        events.name("thread_name", track, cut("task steps", loop.steps.size(), loop.steps_dropped));
        for (const explain::StepRecord& step : loop.steps) {
            events.span("step", step.task, track, step.began, step.ended,
                        "\"resumes\":" + json_string(step.resumes) +
                            ",\"woken_by\":" + json_string(step.woken_by) +
                            ",\"suspends_on\":" + json_string(step.suspends_on),
                        false);
        }
    }
}

}  // namespace

std::vector<std::size_t> pack_into_lanes(const std::vector<Result>& results) {
    std::vector<std::size_t> order;  // the requests that started, by start time
    for (std::size_t i = 0; i < results.size(); ++i) {
        if (reached(results[i].timing.start)) {
            order.push_back(i);
        }
    }
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return results[a].timing.start < results[b].timing.start;
    });

    // Lanes in use, the one that frees up first on top; and freed lanes, the lowest number on top.
    using Busy = std::pair<Clock::time_point, std::size_t>;  // (end of its request, lane)
    std::priority_queue<Busy, std::vector<Busy>, std::greater<>> busy;
    std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> free;
    std::size_t lanes_opened = 0;

    std::vector<std::size_t> lanes(results.size(), 0);
    for (std::size_t i : order) {
        const Timing& t = results[i].timing;
        while (!busy.empty() && busy.top().first <= t.start) {
            free.push(busy.top().second);
            busy.pop();
        }
        if (free.empty()) {
            lanes[i] = ++lanes_opened;
        } else {
            lanes[i] = free.top();
            free.pop();
        }
        busy.push({end_of(t), lanes[i]});
    }
    return lanes;
}

std::string format_trace(const TraceRun& run, const std::vector<Result>& results) {
    // Time 0 is the start of the resolve, unless a request claims to start earlier.
    Clock::time_point origin = run.resolve_start;
    for (const Result& result : results) {
        if (reached(result.timing.start)) {
            origin = std::min(origin, result.timing.start);
        }
    }
    const std::vector<std::size_t> lanes = pack_into_lanes(results);
    const std::size_t lane_count =
        lanes.empty() ? 0 : *std::max_element(lanes.begin(), lanes.end());

    EventWriter events(origin);
    events.name("process_name", 0,
                run.stage + ": " + std::to_string(run.requests) + " requests to " + run.url);
    events.name("thread_name", 0, "resolve");
    for (std::size_t lane = 1; lane <= lane_count; ++lane) {
        events.name("thread_name", lane, "lane " + std::to_string(lane));
    }

    std::string resolve_args = "\"url\":" + json_string(run.url);
    if (!run.resolve_error.empty()) {
        resolve_args += ",\"error\":" + json_string(run.resolve_error);
    }
    events.span("resolve", "resolve", 0, run.resolve_start, run.resolve_done, resolve_args,
                !run.resolve_error.empty());

    for (std::size_t i = 0; i < results.size(); ++i) {
        if (lanes[i] != 0) {
            write_request(events, i, lanes[i], results[i]);
        }
    }
    write_loop(events, run.loop, lane_count + 1);
    return events.finish();
}

}  // namespace sixways
