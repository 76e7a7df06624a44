// The compare tool's arithmetic and output: what each program is run as, how its report is read,
// which runs are skipped, the medians, the Markdown table, the CSV and the SVG plot. Everything here
// is a pure function of its arguments, so it is tested without running anything; compare_main.cpp
// starts the processes.
//
//   compare [N ...] [--delay 100ms] [--concurrency C] [--stages 01,04,...] [--url URL]
//           [--server lab|nginx] [--peers] [--runs K] [--out DIR]
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/duration.hpp"

namespace sixways::lab {

// A program that fetches N times and reports how it went.
struct Program {
    enum class Kind {
        stage,      // build/bin/NN_name N --url URL --json
        yardstick,  // build/bin/yardstick N --url URL --json (reports bytes_received, no latency)
        aiohttp,    // python3 aiohttp_fetch.py N --url URL --json (lab/peers/)
        ab,         // ab -n N -c C URL: ApacheBench's text report
    };
    Kind kind = Kind::stage;
    std::string label;            // the table's name for it: "04_callbacks", "yardstick (C, no parser)"
    std::string path;             // the executable (for aiohttp: the Python interpreter)
    std::string script;           // aiohttp only: the script's path
    bool one_at_a_time = false;   // 01_blocking: takes N x delay, so large N are skipped
};

// How many requests `program` has in flight at most when it fetches n times with --concurrency c
// (0: every request at once): 1 for a one-at-a-time program (stage 01), otherwise c or n, whichever
// is smaller, and never more than ab's limit of 20,000 for ab.
std::size_t in_flight(const Program& program, std::size_t n, std::size_t concurrency);

// The command line that runs `program` for n requests against url, at most `concurrency` at a time
// (0: every request at once, as the stages do by default). Every program but a one-at-a-time one is
// told the limit (`--concurrency C`; ab: `-c C`). argv[0] is the program's path.
std::vector<std::string> command_line(const Program& program, std::size_t n,
                                      std::size_t concurrency, const std::string& url);

// One run, as the program reported it. CPU time and peak memory are the whole process's, which the
// compare tool takes from wait4() for every program alike (an interpreter's start-up counts too).
struct RunReport {
    std::size_t ok = 0;
    std::size_t failed = 0;
    double wall_s = 0;        // the fetching, as the program timed it
    double cpu_s = 0;
    double max_rss_kb = 0;
    std::optional<double> p50_ms;  // not every program reports latency
    std::optional<double> p99_ms;
    std::map<std::string, std::size_t> errors;  // kind -> count, when the report gives them
};

// Reads one --json report: a stage's, the aiohttp script's (same keys), or the yardstick's.
// Throws JsonError or std::runtime_error ("the report has no \"wall_s\"") when it is not one.
RunReport read_json_report(std::string_view text);

// Reads ApacheBench's report ("Complete requests:", "Failed requests:", "Time taken for tests:",
// the percentile table) of a run asked for `requested` requests. Throws std::runtime_error naming
// what is missing.
RunReport read_ab_report(std::string_view text, std::size_t requested);

// The median: the middle value, or the mean of the two middle ones. NaN for no values.
double median(std::vector<double> values);

// How long a run should take against a server that waits `delay` before each answer: one delay
// per round of in_flight() requests, so n x delay one at a time and one delay all at once.
Duration expected_time(const Program& program, std::size_t n, std::size_t concurrency,
                       Duration delay);

// Whether a run would take too long to be worth waiting for: one that needs more than one round of
// requests (stage 01, or a small --concurrency) and over `longest` in all. Returns the note for the
// table ("skipped: would take about 1000 s"), or nothing.
std::optional<std::string> skip_note(const Program& program, std::size_t n,
                                     std::size_t concurrency, Duration delay,
                                     Duration longest = std::chrono::seconds(20));

// How long one run may take before it is killed and counted as failed: a minute, plus three times
// the time it should take, plus 5 ms per request for the client's own work (without a delay, that
// is all there is: the aiohttp peer managed under 1000 requests a second on a 2-core machine).
Duration time_limit(const Program& program, std::size_t n, std::size_t concurrency,
                    Duration delay);

// One line of the table: a program at one N, over all its runs.
struct Row {
    std::string program;
    std::size_t requests = 0;
    std::size_t concurrency = 0;  // the most requests it was allowed in flight: in_flight()
    std::string server;           // the server it fetched from: "lab", "nginx" ("" for --url)
    bool yardstick = false;       // the yardstick's row: format_ratios measures the others by it
    std::vector<RunReport> runs;  // the runs that produced a report
    std::size_t attempts = 0;     // runs tried (more than runs.size() when some failed)
    std::string note;             // why some or all runs are missing, e.g. "skipped: ..."

    // Medians over the runs (NaN without runs or, for latency, without reported latency); failed
    // is the most failures in any one run, so a bad run is not hidden by two good ones.
    double wall_s() const;
    double cpu_s() const;
    double max_rss_mb() const;
    double requests_per_s() const;  // requests / median wall time
    double p50_ms() const;
    double p99_ms() const;
    std::optional<std::size_t> failed() const;
    // The note, followed by the error kinds of the run with the most failures, if it had any
    // ("worst run: timeout 12, connect 3").
    std::string full_note() const;
};

// The Markdown table, grouped by N in the order given: wall s, CPU s, peak MB, req/s, p50 ms,
// p99 ms, failed, note. Unknown values are "-".
std::string format_table(const std::vector<Row>& rows);

// Each program's median wall time as a multiple of the yardstick's, at the same N against the
// same server: one line per N and server that has a yardstick row with a time, in table order
// ("- N = 10000 @ lab: 04_callbacks 1.31, 06_coroutines 1.48, ab (ApacheBench) 2.58"), after a
// line saying what the figures are. A program with failed requests says so, since its time is not
// the time of N answers. Empty when no yardstick row has a time.
std::string format_ratios(const std::vector<Row>& rows);

// The same rows as CSV (RFC 4180), with a header line; unknown values are empty. The columns:
// program, requests, runs, wall_s, cpu_s, peak_mb, requests_per_s, p50_ms, p99_ms, failed, note,
// concurrency, server (new columns go at the end, so scripts that read the older ones keep
// working).
std::string format_csv(const std::vector<Row>& rows);

// Values for the table: three significant digits, at most three decimals ("0.104", "12.3", "1234").
std::string format_value(double value);

struct PlotOptions {
    // What was measured, for the title: "Wall time against N (lab server delay 100 ms)", or
    // "Wall time (...)" for a single N. Empty: no brackets.
    std::string about;
    Duration delay{};             // for the dashed reference lines
    bool reference_lines = true;  // "N x delay" (one at a time) and "delay" (all at once)
};

// Wall time against N, both on log scales: a line (and a dot per point) per program, the reference
// lines dashed, axis labels, a legend. Consecutive N with a value are joined; a missing value
// (skipped or failed) breaks the line. A point where some requests failed is a hollow dot: its
// time is not the time of N answers. Rows at a single N make a bar chart instead: a bar per program
// on a linear time axis from zero, hollow where some requests failed, "no time" where there is none,
// and the reference times that fall on the axis dashed.
std::string plot_svg(const std::vector<Row>& rows, const PlotOptions& options);

// ---- nginx, to check that the lab server is not what limits a stage ----

// What compare fills into lab/peers/nginx.conf.in to run nginx in place of the lab server.
struct NginxSettings {
    std::string prefix;       // a directory of its own: the pid file, the error log, temp files
    std::string echo_module;  // the path of ngx_http_echo_module.so (it gives echo_sleep)
    std::uint16_t port = 0;   // on 127.0.0.1
    Duration delay{};         // how long `/` waits before its answer, as the lab server's --delay
    long open_files = 0;      // worker_rlimit_nofile; worker_connections is a few less
    int backlog = 0;          // the listen queue: the largest the system allows
};

// The template with every @NAME@ replaced: @PREFIX@, @ECHO_MODULE@, @PORT@, @ECHO_SLEEP@ (the
// directive that waits the delay, "echo_sleep 0.100;", or nothing without a delay), @OPEN_FILES@,
// @WORKER_CONNECTIONS@, @BACKLOG@. Throws std::runtime_error naming a placeholder the
// template has that is none of these, so a typo cannot reach nginx.
std::string nginx_config(std::string_view config_template, const NginxSettings& settings);

}  // namespace sixways::lab
