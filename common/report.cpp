// The report: the numbers every stage is compared by, computed the same way for all six.
#include "common/report.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string_view>
#include <utility>

#include "common/utf8.hpp"

namespace sixways {

namespace {

// A phase that was never reached keeps the clock's epoch (see Timing).
bool reached(Clock::time_point t) { return t != Clock::time_point{}; }

// The most requests in flight at the same instant, from the [start, done] interval of each one.
//
// The sweep: turn every interval into two events, +1 at its start and -1 at its end, sort them by
// time and walk through them keeping a running count; its highest value is the answer. Ties decide
// what "at the same instant" means, so they are ordered on purpose:
//   - a request that ends at the very instant another starts does not overlap it. Stage 01 starts
//     the next request right after the previous one ends, and two clock readings can be equal;
//     it must still report 1. So ends sort before starts at the same time...
//   - ...except the end of a request that took no measurable time at all (start == done, e.g. a
//     socket() that failed at once). It was in flight for that instant, so its end sorts after
//     every start at that time.
std::size_t most_in_flight(const std::vector<Result>& results) {
    enum Order { end = 0, start = 1, end_of_instant = 2 };  // tie order at one time point
    struct Event {
        Clock::time_point time;
        Order order;
    };
    std::vector<Event> events;
    events.reserve(2 * results.size());
    for (const Result& result : results) {
        const Timing& t = result.timing;
        if (!reached(t.start) || t.done < t.start) {
            continue;  // never started (e.g. a resolve error): it was never in flight
        }
        events.push_back({t.start, start});
        events.push_back({t.done, t.done == t.start ? end_of_instant : end});
    }
    std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
        return a.time != b.time ? a.time < b.time : a.order < b.order;
    });
    std::size_t in_flight = 0;
    std::size_t most = 0;
    for (const Event& event : events) {
        if (event.order == start) {
            most = std::max(most, ++in_flight);
        } else {
            --in_flight;
        }
    }
    return most;
}

// Nearest-rank percentile of sorted, non-empty values: the smallest value that at least p percent
// of the values are less than or equal to. No interpolation: it is always a latency that happened.
double percentile(const std::vector<double>& sorted, std::size_t p) {
    std::size_t rank = (p * sorted.size() + 99) / 100;  // ceil(p/100 * n), in integers
    return sorted[std::max<std::size_t>(rank, 1) - 1];
}

double milliseconds(Clock::duration d) {
    return std::chrono::duration<double, std::milli>(d).count();
}

double seconds(const timeval& tv) {
    return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6;
}

// printf into a std::string. The program never calls setlocale, so "%f" always prints a '.'.
template <typename... Args>
std::string format(const char* pattern, Args... args) {
    int size = std::snprintf(nullptr, 0, pattern, args...);
    std::string text(static_cast<std::size_t>(size) + 1, '\0');
    std::snprintf(text.data(), text.size(), pattern, args...);
    text.pop_back();  // snprintf's terminating '\0'
    return text;
}


// A JSON number with a fixed number of decimals; JSON has no NaN or infinity, so those become null.
std::string json_number(double value, int decimals) {
    if (!std::isfinite(value)) {
        return "null";
    }
    return format("%.*f", decimals, value);
}

}  // namespace

// A JSON string literal: quotes, backslashes and control characters escaped, well-formed UTF-8
// passed through, and every byte that is not part of well-formed UTF-8 replaced by U+FFFD, the
// replacement character. JSON must be UTF-8, and a URL or an error message may hold any bytes a
// server or a user put there; a reader that meets a stray 0xE9 may refuse the whole report.
std::string json_string(const std::string& text) {
    static constexpr std::string_view replacement_character = "\xEF\xBF\xBD";  // U+FFFD in UTF-8
    std::string out = "\"";
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (static_cast<unsigned char>(c) >= 0x80) {
            const std::size_t length = utf8_sequence_length(std::string_view(text).substr(i));
            if (length == 0) {
                out += replacement_character;
            } else {
                out.append(text, i, length);
                i += length - 1;
            }
            continue;
        }
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) {
                    out += format("\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
                } else {
                    out += c;
                }
        }
    }
    return out + "\"";
}

Report summarise(const std::string& stage, const std::string& url, std::size_t requests,
                 const std::vector<Result>& results) {
    Report report;
    report.stage = stage;
    report.url = url;
    report.requests = requests;
    std::vector<double> latencies;
    for (const Result& result : results) {
        if (result.ok()) {
            ++report.ok;
            report.bytes += result.response.body_bytes;
            latencies.push_back(milliseconds(result.timing.done - result.timing.start));
        } else {
            ++report.failed;
            ++report.errors[to_string(result.error)];
            ++report.error_messages[result.error_message];
        }
    }
    report.unfinished = requests > results.size() ? requests - results.size() : 0;
    report.concurrency = most_in_flight(results);
    if (!latencies.empty()) {
        std::sort(latencies.begin(), latencies.end());
        report.p50_ms = percentile(latencies, 50);
        report.p99_ms = percentile(latencies, 99);
        report.max_ms = latencies.back();
    }
    return report;
}

void add_process_usage(Report& report) {
    rusage usage{};
    if (getrusage(RUSAGE_SELF, &usage) != 0) {
        return;  // cannot happen for RUSAGE_SELF; the fields stay 0
    }
    // User time is our own code; system time is the kernel working for us (the socket calls).
    // Stage 03's busy polling shows up in both.
    report.cpu_s = seconds(usage.ru_utime) + seconds(usage.ru_stime);
    report.max_rss_kb = usage.ru_maxrss;  // Linux reports it in KiB
}

std::string format_text(const Report& report) {
    std::size_t finished = report.ok + report.failed;
    double rate = report.wall_s > 0 ? static_cast<double>(finished) / report.wall_s : 0.0;
    std::string text = format("%s: %zu %s to %s in %.3f s (%.0f req/s), %zu ok, %zu failed",
                              report.stage.c_str(), report.requests,
                              report.requests == 1 ? "request" : "requests", report.url.c_str(),
                              report.wall_s, rate, report.ok, report.failed);
    if (report.unfinished > 0) {
        text += format(", %zu unfinished", report.unfinished);
    }
    text += format(", %llu bytes, cpu %.2f s, ", static_cast<unsigned long long>(report.bytes),
                   report.cpu_s);
    if (report.ok == 0) {
        text += "latency -";  // no request succeeded: there is no latency to show
    } else {
        text += format("latency p50 %.0f ms p99 %.0f ms max %.0f ms", report.p50_ms, report.p99_ms,
                       report.max_ms);
    }
    return text;
}

std::string format_error_counts(const Report& report) {
    std::vector<std::pair<std::string, std::size_t>> counts(report.error_messages.begin(),
                                                            report.error_messages.end());
    // Most frequent first; equal counts keep the map's alphabetical order.
    std::stable_sort(counts.begin(), counts.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    std::string text;
    for (const auto& [message, count] : counts) {
        text += format("%6zu x %s\n", count, message.c_str());
    }
    return text;
}

std::string format_json(const Report& report) {
    // Seconds to the microsecond (getrusage's resolution), milliseconds to the microsecond too.
    std::string json = "{";
    json += "\"stage\":" + json_string(report.stage);
    json += ",\"url\":" + json_string(report.url);
    json += format(",\"requests\":%zu,\"ok\":%zu,\"failed\":%zu", report.requests, report.ok,
                   report.failed);
    if (report.unfinished > 0) {
        json += format(",\"unfinished\":%zu", report.unfinished);
    }
    json += format(",\"bytes\":%llu", static_cast<unsigned long long>(report.bytes));
    json += ",\"wall_s\":" + json_number(report.wall_s, 6);
    json += ",\"cpu_s\":" + json_number(report.cpu_s, 6);
    json += format(",\"max_rss_kb\":%ld,\"concurrency\":%zu", report.max_rss_kb,
                   report.concurrency);
    if (report.ok == 0) {
        json += ",\"latency_ms\":{\"p50\":null,\"p99\":null,\"max\":null}";
    } else {
        json += ",\"latency_ms\":{\"p50\":" + json_number(report.p50_ms, 3) +
                ",\"p99\":" + json_number(report.p99_ms, 3) +
                ",\"max\":" + json_number(report.max_ms, 3) + "}";
    }
    json += ",\"errors\":{";
    const char* separator = "";
    for (const auto& [kind, count] : report.errors) {
        json += separator + json_string(kind) + format(":%zu", count);
        separator = ",";
    }
    json += "}}";
    return json;
}

}  // namespace sixways
