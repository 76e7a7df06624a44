#include "lab/timeline.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <vector>

#include "common/json_reader.hpp"
#include "lab/svg.hpp"

namespace sixways::lab {

namespace {

// The layout, in SVG units. Lanes share at most lanes_height; with many lanes each is thin, and the
// picture shows the shape of the run rather than single requests.
constexpr double width = 1000;
constexpr double left = 80, right = 970;
constexpr double top = 78;
constexpr double row_height = 16;     // when there is room
constexpr double lanes_height = 640;  // never taller than this in all

struct Colour {
    const char* phase;
    const char* fill;
};
constexpr Colour phase_colours[] = {
    {"connect", "#4e79a7"},  // blue
    {"send", "#f28e2b"},     // orange
    {"wait", "#bab0ac"},     // grey: nothing to do but wait, the phase that dominates
    {"receive", "#59a14f"},  // green
};
constexpr const char* resolve_fill = "#b07aa1";
// The loop's rows, under the lanes: epoll_wait asleep, a turn running, a task's step (stage 06).
constexpr Colour loop_colours[] = {
    {"loop", "#d9d2e9"},  // pale: the loop sleeps in epoll_wait
    {"turn", "#76b7b2"},  // teal: the turn runs callbacks, resumes or steps
    {"step", "#edc948"},  // yellow: one step of a task
};
constexpr const char* failed_fill = "#e15759";
constexpr const char* request_fill = "#e8e8e8";

struct Span {
    std::string name;
    std::string category;
    int track = 0;
    double start_us = 0;
    double duration_us = 0;
    bool failed = false;
};

bool on_loop_row(const Span& span) {
    return span.category == "loop" || span.category == "turn" || span.category == "step";
}

const char* fill_for(const Span& span) {
    if (span.failed && span.category != "request") {
        return failed_fill;
    }
    if (span.category == "resolve") {
        return resolve_fill;
    }
    for (const Colour& colour : loop_colours) {
        if (span.category == colour.phase) {
            return colour.fill;
        }
    }
    for (const Colour& colour : phase_colours) {
        if (span.name == colour.phase) {
            return colour.fill;
        }
    }
    return request_fill;
}

double number_in(const Json& event, const char* key) {
    const Json* value = event.find(key);
    if (value == nullptr || value->type != Json::Type::number) {
        throw std::runtime_error(std::string("an event has no number \"") + key + "\"");
    }
    return value->number;
}

// A file can hold any number: only those a drawing can place are accepted. A lane is a whole
// number that fits an int (as Chrome's tids do); times are finite and not negative, as the stages
// write them, and so is where each span ends.
int lane_in(const Json& event) {
    const double tid = number_in(event, "tid");
    if (!(tid >= 0 && tid <= std::numeric_limits<int>::max()) || tid != std::floor(tid)) {
        throw std::runtime_error("an event's \"tid\" is not a whole number from 0 to " +
                                 std::to_string(std::numeric_limits<int>::max()));
    }
    return static_cast<int>(tid);
}

double time_in(const Json& event, const char* key) {
    const double value = number_in(event, key);
    if (!(value >= 0 && std::isfinite(value))) {
        throw std::runtime_error(std::string("an event's \"") + key +
                                 "\" is negative or too large");
    }
    return value;
}

std::string text(double x, double y, const std::string& content, const std::string& attributes) {
    return "<text x=\"" + svg::number(x) + "\" y=\"" + svg::number(y) + "\"" +
           (attributes.empty() ? "" : " " + attributes) + ">" + svg::escape(content) + "</text>\n";
}

std::string rect(double x, double y, double w, double h, const char* fill) {
    return "<rect x=\"" + svg::number(x) + "\" y=\"" + svg::number(y) + "\" width=\"" +
           svg::number(w) + "\" height=\"" + svg::number(h) + "\" fill=\"" + fill + "\"/>\n";
}

}  // namespace

std::string timeline_svg(std::string_view trace_json) {
    const Json trace = parse_json(trace_json);
    const Json* events = trace.find("traceEvents");
    if (events == nullptr || events->type != Json::Type::array) {
        throw std::runtime_error("no traceEvents array");
    }

    std::string title = "timeline";
    std::vector<Span> spans;
    std::vector<int> loop_tracks;  // the tracks of the loop's rows, in order: "loop", "task steps"
    int steps_track = -1;          // the loop's row that holds task steps, if any
    int lanes = 0;
    double end_us = 0;
    std::size_t requests = 0, failed = 0;
    for (const Json& event : events->items) {
        const Json* phase = event.find("ph");
        if (phase == nullptr) {
            continue;
        }
        const Json* name = event.find("name");
        if (phase->string == "M" && name != nullptr && name->string == "process_name") {
            if (const Json* args = event.find("args"); args != nullptr && args->find("name")) {
                title = args->find("name")->string;
            }
        }
        if (phase->string != "X") {
            continue;
        }
        Span span;
        span.name = name == nullptr ? "" : name->string;
        const Json* category = event.find("cat");
        span.category = category == nullptr ? "" : category->string;
        span.track = lane_in(event);
        span.start_us = time_in(event, "ts");
        span.duration_us = time_in(event, "dur");
        if (!std::isfinite(span.start_us + span.duration_us)) {
            throw std::runtime_error("an event ends too late to draw");
        }
        const Json* args = event.find("args");
        span.failed = args != nullptr && args->find("error") != nullptr;
        if (!on_loop_row(span)) {
            lanes = std::max(lanes, span.track);
        } else if (std::find(loop_tracks.begin(), loop_tracks.end(), span.track) == loop_tracks.end()) {
            loop_tracks.push_back(span.track);
        }
        if (span.category == "step") {
            steps_track = span.track;
        }
        end_us = std::max(end_us, span.start_us + span.duration_us);
        if (span.category == "request") {
            ++requests;
            failed += span.failed ? 1 : 0;
        }
        spans.push_back(span);
    }
    end_us = std::max(end_us, 1.0);
    std::sort(loop_tracks.begin(), loop_tracks.end());

    // Rows: the resolve first (track 0), a small gap, the lanes, another gap, the loop's rows.
    const double lane_height =
        lanes == 0 ? row_height : std::min(row_height, lanes_height / lanes);
    const double lanes_top = top + row_height + 8;
    const double loop_top = lanes_top + lane_height * lanes + 8;
    const double bottom = loop_tracks.empty() ? loop_top - 8
                                              : loop_top + row_height * static_cast<double>(loop_tracks.size());
    const double height = bottom + 56;
    auto x_of = [&](double us) { return left + us / end_us * (right - left); };
    auto loop_row = [&](int track) {
        return static_cast<double>(std::find(loop_tracks.begin(), loop_tracks.end(), track) - loop_tracks.begin());
    };
    auto y_of = [&](int track) {
        if (track > lanes) return loop_top + row_height * loop_row(track);
        return track == 0 ? top : lanes_top + lane_height * (track - 1);
    };
    const double gap = lane_height >= 6 ? 2 : 0;  // between rows, only where rows are tall enough

    std::string out = svg::open_document(width, height);
    out += text(left, 24, title, "font-size=\"15\" font-weight=\"bold\"");
    // "1.12 s" from a second on, "250 ms" below: never "1.12e+03 ms".
    char duration[32];
    if (end_us >= 1e6) {
        std::snprintf(duration, sizeof duration, "%.2f s", end_us / 1e6);
    } else {
        std::snprintf(duration, sizeof duration, "%.0f ms", end_us / 1000);
    }
    char summary[160];
    std::snprintf(summary, sizeof summary,
                  "%zu requests in %s, %zu failed; %d %s: a request takes the lowest lane "
                  "free when it starts",
                  requests, duration, failed, lanes, lanes == 1 ? "lane" : "lanes");
    out += text(left, 44, summary, "fill=\"#555555\"");

    // The legend.
    double legend_x = left;
    auto legend_entry = [&](const char* fill, const std::string& label) {
        out += rect(legend_x, 54, 12, 12, fill);
        out += text(legend_x + 16, 64, label, "");
        legend_x += 30 + 7.5 * static_cast<double>(label.size());
    };
    legend_entry(resolve_fill, "resolve");
    for (const Colour& colour : phase_colours) {
        legend_entry(colour.fill, colour.phase);
    }
    legend_entry(failed_fill, "failed here");
    legend_entry(request_fill, "whole request");
    if (!loop_tracks.empty()) {
        legend_entry(loop_colours[0].fill, "epoll_wait");
        legend_entry(loop_colours[1].fill, "turn");
    }
    if (steps_track >= 0) {
        legend_entry(loop_colours[2].fill, "task step");
    }

    // The time axis: round ticks, in ms (or s for long runs), with faint grid lines.
    const bool in_seconds = end_us >= 10e6;
    const double unit_us = in_seconds ? 1e6 : 1e3;
    for (double tick : svg::linear_ticks(0, end_us / unit_us, 8)) {
        double x = x_of(tick * unit_us);
        out += "<line x1=\"" + svg::number(x) + "\" y1=\"" + svg::number(top - 4) + "\" x2=\"" +
               svg::number(x) + "\" y2=\"" + svg::number(bottom + 4) +
               "\" stroke=\"#dddddd\"/>\n";
        out += text(x, bottom + 20, svg::tick_label(tick), "text-anchor=\"middle\"");
    }
    out += text((left + right) / 2, bottom + 42, in_seconds ? "time (s)" : "time (ms)",
                "text-anchor=\"middle\"");

    // Row labels: every lane while they are tall enough to read, else the first and the last
    // (a trace may number its lanes up to 2^31 - 1: never visit them one by one).
    out += text(left - 8, top + 12, "resolve", "text-anchor=\"end\"");
    auto lane_label = [&](int lane, double y) {
        out += text(left - 8, y, "lane " + std::to_string(lane),
                    "text-anchor=\"end\" font-size=\"11\"");
    };
    if (lane_height >= 12) {
        for (int lane = 1; lane <= lanes; ++lane) {
            lane_label(lane, y_of(lane) + lane_height / 2 + 4);
        }
    } else if (lanes > 0) {
        lane_label(1, y_of(1) + lane_height / 2 + 4);
        if (lanes > 1) {
            lane_label(lanes, y_of(lanes) + lane_height);
        }
    }

    for (int track : loop_tracks) {
        out += text(left - 8, y_of(track) + 12, track == steps_track ? "task steps" : "loop",
                    "text-anchor=\"end\" font-size=\"11\"");
    }

    // Where a span goes: its row, its start and its length (at least half a unit, to stay visible).
    auto geometry = [&](const Span& span) {
        double h = span.track == 0 ? row_height - gap : span.track > lanes ? row_height - 2 : lane_height - gap;
        double w = std::max(span.duration_us / end_us * (right - left), 0.5);
        return "x=\"" + svg::number(x_of(span.start_us)) + "\" y=\"" +
               svg::number(y_of(span.track) + gap / 2) + "\" width=\"" + svg::number(w) +
               "\" height=\"" + svg::number(std::max(h, 0.1)) + "\"";
    };
    // The spans: each request's bar first, its phases over it.
    for (const char* category : {"request", "resolve", "phase", "loop", "turn", "step"}) {
        for (const Span& span : spans) {
            if (span.category == category) {
                out += "<rect " + geometry(span) + " fill=\"" + fill_for(span) + "\"/>\n";
            }
        }
    }
    // Where rows are tall enough to show it, a white edge around each request, so that requests
    // one after another in a lane stay apart.
    if (lane_height >= 6) {
        for (const Span& span : spans) {
            if (span.category == "request") {
                out += "<rect " + geometry(span) + " fill=\"none\" stroke=\"white\"/>\n";
            }
        }
    }
    return out + svg::close_document();
}

}  // namespace sixways::lab
