// The compare tool's pure parts: commands, reports, medians, the skip rule, the table and the CSV.
// The plot is in compare_plot.cpp.
#include "lab/compare.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <stdexcept>

#include "common/json_reader.hpp"

namespace sixways::lab {

namespace {

constexpr double unknown = std::numeric_limits<double>::quiet_NaN();

double seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

const Json& member(const Json& report, const char* key, Json::Type type) {
    const Json* value = report.find(key);
    if (value == nullptr || value->type != type) {
        throw std::runtime_error(std::string("the report has no \"") + key + "\" of the right type");
    }
    return *value;
}

std::size_t count(const Json& report, const char* key) {
    double value = member(report, key, Json::Type::number).number;
    if (value < 0) {
        throw std::runtime_error(std::string("the report's \"") + key + "\" is negative");
    }
    return static_cast<std::size_t>(value);
}

// A latency the report gives as a number; null (no request succeeded) or absent means unknown.
std::optional<double> latency(const Json& report, const char* key) {
    const Json* latency_ms = report.find("latency_ms");
    const Json* value = latency_ms == nullptr ? nullptr : latency_ms->find(key);
    if (value == nullptr || value->type != Json::Type::number) {
        return std::nullopt;
    }
    return value->number;
}

// The text after `label` on its line, e.g. "   0.115 seconds" after "Time taken for tests:".
std::optional<std::string> after(std::string_view text, std::string_view label) {
    std::size_t at = text.find(label);
    if (at == std::string_view::npos) {
        return std::nullopt;
    }
    at += label.size();
    std::size_t end = text.find('\n', at);
    return std::string(text.substr(at, end == std::string_view::npos ? end : end - at));
}

double number_after(std::string_view text, std::string_view label) {
    std::optional<std::string> rest = after(text, label);
    if (!rest) {
        throw std::runtime_error("ApacheBench's report has no \"" + std::string(label) + "\"");
    }
    char* end = nullptr;
    double value = std::strtod(rest->c_str(), &end);
    if (end == rest->c_str()) {
        throw std::runtime_error("ApacheBench's \"" + std::string(label) + "\" is not a number");
    }
    return value;
}

// A row of ab's percentile table: "  99%     63" (milliseconds, whole).
std::optional<double> ab_percentile(std::string_view text, std::string_view percent) {
    std::size_t table = text.find("Percentage of the requests served");
    if (table == std::string_view::npos) {
        return std::nullopt;
    }
    std::optional<std::string> rest = after(text.substr(table), "\n  " + std::string(percent) + "%");
    if (!rest) {
        rest = after(text.substr(table), "\n " + std::string(percent) + "%");  // " 100%"
    }
    if (!rest) {
        return std::nullopt;
    }
    return std::strtod(rest->c_str(), nullptr);
}

template <typename... Args>
std::string format(const char* pattern, Args... args) {
    int size = std::snprintf(nullptr, 0, pattern, args...);
    std::string text(static_cast<std::size_t>(size) + 1, '\0');
    std::snprintf(text.data(), text.size(), pattern, args...);
    text.pop_back();
    return text;
}

// The median of one field over the runs that have it.
template <typename Field>
double median_of(const std::vector<RunReport>& runs, Field field) {
    std::vector<double> values;
    for (const RunReport& run : runs) {
        if (std::optional<double> value = field(run)) {
            values.push_back(*value);
        }
    }
    return median(std::move(values));
}

std::string csv_field(const std::string& text) {
    if (text.find_first_of(",\"\r\n") == std::string::npos) {
        return text;
    }
    std::string quoted = "\"";
    for (char c : text) {
        quoted += c;
        if (c == '"') {
            quoted += '"';  // a quote inside a quoted field is written twice
        }
    }
    return quoted + "\"";
}

// A value for the CSV: full precision for a spreadsheet, empty when unknown.
std::string csv_number(double value) {
    return std::isnan(value) ? "" : format("%.6g", value);
}

}  // namespace

std::size_t in_flight(const Program& program, std::size_t n, std::size_t concurrency) {
    if (program.one_at_a_time) {
        return 1;
    }
    std::size_t most = concurrency == 0 ? n : std::min(concurrency, n);
    if (program.kind == Program::Kind::ab) {
        most = std::min<std::size_t>(most, 20'000);  // ab refuses more (and a -c over its -n)
    }
    return std::max<std::size_t>(most, 1);
}

std::vector<std::string> command_line(const Program& program, std::size_t n,
                                      std::size_t concurrency, const std::string& url) {
    const std::string count = std::to_string(n);
    std::vector<std::string> argv;
    switch (program.kind) {
        case Program::Kind::stage:
        case Program::Kind::yardstick:
            argv = {program.path, count, "--url", url, "--json"};
            break;
        case Program::Kind::aiohttp:
            argv = {program.path, program.script, count, "--url", url, "--json"};
            break;
        case Program::Kind::ab:
            // -c: as many in flight as the stages have; -r: go on after a failed receive; -s 10:
            // the stages' per-request timeout.
            return {program.path, "-n", count, "-c",
                    std::to_string(in_flight(program, n, concurrency)), "-r", "-s", "10", url};
    }
    if (concurrency > 0 && !program.one_at_a_time) {
        argv.push_back("--concurrency");
        argv.push_back(std::to_string(concurrency));
    }
    return argv;
}

RunReport read_json_report(std::string_view text) {
    const Json report = parse_json(text);
    RunReport run;
    run.ok = count(report, "ok");
    run.failed = count(report, "failed");
    run.wall_s = member(report, "wall_s", Json::Type::number).number;
    run.cpu_s = member(report, "cpu_s", Json::Type::number).number;
    run.max_rss_kb = member(report, "max_rss_kb", Json::Type::number).number;
    run.p50_ms = latency(report, "p50");
    run.p99_ms = latency(report, "p99");
    if (const Json* errors = report.find("errors"); errors != nullptr) {
        for (std::size_t i = 0; i < errors->keys.size(); ++i) {
            if (errors->items[i].type == Json::Type::number) {
                run.errors[errors->keys[i]] = static_cast<std::size_t>(errors->items[i].number);
            }
        }
    }
    return run;
}

RunReport read_ab_report(std::string_view text, std::size_t requested) {
    // ab counts a request "complete" when it ended, well or not, and "failed" when it ended badly
    // (refused, reset, a body of the wrong length); requests it never completed (it gave up after a
    // timeout) are in neither, so failed is what is left of the requests it was asked for.
    RunReport run;
    auto complete = static_cast<std::size_t>(number_after(text, "Complete requests:"));
    auto failed = static_cast<std::size_t>(number_after(text, "Failed requests:"));
    run.ok = complete >= failed ? complete - failed : 0;
    run.failed = requested >= run.ok ? requested - run.ok : 0;
    run.wall_s = number_after(text, "Time taken for tests:");
    run.p50_ms = ab_percentile(text, "50");
    run.p99_ms = ab_percentile(text, "99");
    return run;
}

double median(std::vector<double> values) {
    if (values.empty()) {
        return unknown;
    }
    std::sort(values.begin(), values.end());
    std::size_t middle = values.size() / 2;
    return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

Duration expected_time(const Program& program, std::size_t n, std::size_t concurrency,
                       Duration delay) {
    std::size_t most = in_flight(program, n, concurrency);
    std::size_t rounds = (n + most - 1) / most;
    return delay * static_cast<Duration::rep>(std::max<std::size_t>(rounds, 1));
}

std::optional<std::string> skip_note(const Program& program, std::size_t n,
                                     std::size_t concurrency, Duration delay, Duration longest) {
    if (in_flight(program, n, concurrency) >= n) {
        return std::nullopt;  // all at once: about one delay, however long that is
    }
    Duration expected = expected_time(program, n, concurrency, delay);
    if (expected <= longest) {
        return std::nullopt;
    }
    return format("skipped: would take about %.0f s", seconds(expected));
}

Duration time_limit(const Program& program, std::size_t n, std::size_t concurrency,
                    Duration delay) {
    return std::chrono::minutes(1) + 3 * expected_time(program, n, concurrency, delay) +
           std::chrono::milliseconds(5) * static_cast<Duration::rep>(n);
}

double Row::wall_s() const {
    return median_of(runs, [](const RunReport& r) { return std::optional<double>(r.wall_s); });
}

double Row::cpu_s() const {
    return median_of(runs, [](const RunReport& r) { return std::optional<double>(r.cpu_s); });
}

double Row::max_rss_mb() const {
    return median_of(runs, [](const RunReport& r) {
        return std::optional<double>(r.max_rss_kb / 1024);
    });
}

double Row::requests_per_s() const {
    double wall = wall_s();
    return wall > 0 ? static_cast<double>(requests) / wall : unknown;
}

double Row::p50_ms() const {
    return median_of(runs, [](const RunReport& r) { return r.p50_ms; });
}

double Row::p99_ms() const {
    return median_of(runs, [](const RunReport& r) { return r.p99_ms; });
}

std::optional<std::size_t> Row::failed() const {
    if (runs.empty()) {
        return std::nullopt;
    }
    std::size_t most = 0;
    for (const RunReport& run : runs) {
        most = std::max(most, run.failed);
    }
    return most;
}

std::string Row::full_note() const {
    const RunReport* worst = nullptr;
    for (const RunReport& run : runs) {
        if (run.failed > 0 && (worst == nullptr || run.failed > worst->failed)) {
            worst = &run;
        }
    }
    if (worst == nullptr || worst->errors.empty()) {
        return note;
    }
    std::string kinds;
    for (const auto& [kind, count] : worst->errors) {
        kinds += (kinds.empty() ? "" : ", ") + kind + " " + std::to_string(count);
    }
    return note + (note.empty() ? "" : "; ") + (runs.size() > 1 ? "worst run: " : "errors: ") +
           kinds;
}

std::string format_value(double value) {
    if (std::isnan(value)) {
        return "-";
    }
    double size = std::abs(value);
    if (size >= 100) {
        return format("%.0f", value);
    }
    if (size >= 10) {
        return format("%.1f", value);
    }
    if (size >= 1) {
        return format("%.2f", value);
    }
    return format("%.3f", value);
}

std::string format_table(const std::vector<Row>& rows) {
    // Grouped by N, in the order the counts first appear; programs keep their order within a group.
    std::vector<std::size_t> counts;
    for (const Row& row : rows) {
        if (std::find(counts.begin(), counts.end(), row.requests) == counts.end()) {
            counts.push_back(row.requests);
        }
    }
    std::string table = "| program | N | wall s | CPU s | peak MB | req/s | p50 ms | p99 ms | failed "
                        "| note |\n"
                        "|---|--:|--:|--:|--:|--:|--:|--:|--:|---|\n";
    for (std::size_t n : counts) {
        for (const Row& row : rows) {
            if (row.requests != n) {
                continue;
            }
            std::optional<std::size_t> failed = row.failed();
            double rate = row.requests_per_s();
            table += "| " + row.program + " | " + std::to_string(row.requests) + " | " +
                     format_value(row.wall_s()) + " | " + format_value(row.cpu_s()) + " | " +
                     format_value(row.max_rss_mb()) + " | " +
                     (std::isnan(rate) ? "-" : format("%.0f", rate)) + " | " +
                     format_value(row.p50_ms()) + " | " + format_value(row.p99_ms()) + " | " +
                     (failed ? std::to_string(*failed) : "-") + " | " + row.full_note() + " |\n";
        }
    }
    return table;
}

std::string format_ratios(const std::vector<Row>& rows) {
    std::string lines;
    for (const Row& reference : rows) {
        if (!reference.yardstick || std::isnan(reference.wall_s())) {
            continue;
        }
        std::string line;
        for (const Row& row : rows) {
            if (row.yardstick || row.requests != reference.requests ||
                row.server != reference.server || std::isnan(row.wall_s())) {
                continue;
            }
            // The table's name without " @ lab": the line says the server once.
            std::string name = row.program;
            const std::string suffix = " @ " + row.server;
            if (!row.server.empty() && name.size() > suffix.size() &&
                name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
                name.resize(name.size() - suffix.size());
            }
            const std::optional<std::size_t> failed = row.failed();
            line += (line.empty() ? "" : ", ") + name + " " +
                    format_value(row.wall_s() / reference.wall_s()) +
                    (failed && *failed > 0 ? " (" + std::to_string(*failed) + " failed)" : "");
        }
        if (!line.empty()) {
            const std::optional<std::size_t> failed = reference.failed();
            lines += "- N = " + std::to_string(reference.requests) +
                     (reference.server.empty() ? "" : " @ " + reference.server) +
                     (failed && *failed > 0
                          ? " (the yardstick: " + std::to_string(*failed) + " failed)"
                          : "") +
                     ": " + line + "\n";
        }
    }
    if (lines.empty()) {
        return "";
    }
    return "Wall time as a multiple of the yardstick's (medians, same N and server):\n" + lines;
}

std::string format_csv(const std::vector<Row>& rows) {
    std::string csv = "program,requests,runs,wall_s,cpu_s,peak_mb,requests_per_s,p50_ms,p99_ms,"
                      "failed,note,concurrency,server\n";
    for (const Row& row : rows) {
        std::optional<std::size_t> failed = row.failed();
        csv += csv_field(row.program) + "," + std::to_string(row.requests) + "," +
               std::to_string(row.runs.size()) + "," + csv_number(row.wall_s()) + "," +
               csv_number(row.cpu_s()) + "," + csv_number(row.max_rss_mb()) + "," +
               csv_number(row.requests_per_s()) + "," + csv_number(row.p50_ms()) + "," +
               csv_number(row.p99_ms()) + "," + (failed ? std::to_string(*failed) : "") + "," +
               csv_field(row.full_note()) + "," + std::to_string(row.concurrency) + "," +
               csv_field(row.server) + "\n";
    }
    return csv;
}

std::string nginx_config(std::string_view config_template, const NginxSettings& settings) {
    // worker_connections counts every connection of the worker, the listening socket included; a
    // few of its descriptors are not connections (the error log, epoll, the channel to the master).
    const long connections = std::max(settings.open_files - 32, 16L);
    const std::map<std::string, std::string, std::less<>> values = {
        {"PREFIX", settings.prefix},
        {"ECHO_MODULE", settings.echo_module},
        {"PORT", std::to_string(settings.port)},
        // echo_sleep takes seconds with up to three decimals.
        {"ECHO_SLEEP", settings.delay > Duration::zero()
                           ? format("echo_sleep %.3f;", seconds(settings.delay))
                           : std::string()},
        {"OPEN_FILES", std::to_string(settings.open_files)},
        {"WORKER_CONNECTIONS", std::to_string(connections)},
        {"BACKLOG", std::to_string(settings.backlog)},
    };
    // A placeholder is @ + capital letters or _ + @. Any other @ is nginx's own (`@body` names a
    // location) and is copied as it is.
    auto name_char = [](char c) { return (c >= 'A' && c <= 'Z') || c == '_'; };
    std::string config;
    std::size_t at = 0;
    while (at < config_template.size()) {
        std::size_t start = config_template.find('@', at);
        if (start == std::string_view::npos) {
            config += config_template.substr(at);
            break;
        }
        config += config_template.substr(at, start - at);
        std::size_t end = start + 1;
        while (end < config_template.size() && name_char(config_template[end])) {
            ++end;
        }
        if (end == start + 1 || end == config_template.size() || config_template[end] != '@') {
            config += '@';
            at = start + 1;
            continue;
        }
        std::string_view name = config_template.substr(start + 1, end - start - 1);
        auto value = values.find(name);
        if (value == values.end()) {
            throw std::runtime_error("the nginx configuration template has an unknown placeholder @" +
                                     std::string(name) + "@");
        }
        config += value->second;
        at = end + 1;
    }
    return config;
}

}  // namespace sixways::lab
