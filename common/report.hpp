// The report: one line for people, one JSON object for machines. Both are built from the Results.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/fetch.hpp"

namespace sixways {

struct Report {
    std::string stage;
    std::string url;
    std::size_t requests = 0;       // asked for
    std::size_t ok = 0;             // got a complete response, of any status
    std::size_t failed = 0;         // got an error
    std::size_t unfinished = 0;     // neither: only after Ctrl-C
    std::uint64_t bytes = 0;        // body bytes after chunked decoding, over all responses
    double wall_s = 0;
    double cpu_s = 0;               // user + system time of the process
    long max_rss_kb = 0;
    std::size_t concurrency = 0;    // the most requests actually in flight at once (from Timing)
    double p50_ms = 0, p99_ms = 0, max_ms = 0;  // latency of the ok requests, start to done
    std::map<std::string, std::size_t> errors;          // kind -> count
    std::map<std::string, std::size_t> error_messages;  // message -> count
};

// Fills everything but wall_s, cpu_s and max_rss_kb. `results` may hold fewer entries than
// `requests` after Ctrl-C; the difference is counted as unfinished.
Report summarise(const std::string& stage, const std::string& url, std::size_t requests,
                 const std::vector<Result>& results);

// Reads the process's CPU time and peak memory (getrusage) into the report.
void add_process_usage(Report& report);

// "04_callbacks: 1000 requests to http://127.0.0.1:8080/ in 0.131 s (7634 req/s), 1000 ok, 0 failed,
//  100000 bytes, cpu 0.05 s, latency p50 102 ms p99 118 ms max 121 ms"
std::string format_text(const Report& report);
// One line per distinct error message, most frequent first: "   990 x connect: Connection refused".
std::string format_error_counts(const Report& report);
// Exactly one JSON object, no trailing newline.
std::string format_json(const Report& report);

// A JSON string literal: quotes, backslashes and control characters escaped; well-formed UTF-8
// passes through unchanged, and each byte that is not part of it becomes U+FFFD, so the result is
// always valid JSON. Used by the report, the --trace writer and the crawler's report.
std::string json_string(const std::string& text);

}  // namespace sixways
