// The report: what the crawler's FetchStatistics say, for people and for programs.
#include "06_coroutines/crawler/report.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>

#include "common/report.hpp"

namespace sixways::crawler {

namespace {

std::string fixed(double value, int decimals) {
    char text[64];
    std::snprintf(text, sizeof text, "%.*f", decimals, value);
    return text;
}

double urls_per_second(const CrawlReport& report) {
    return report.wall_s > 0 ? static_cast<double>(report.fetches.size()) / report.wall_s : 0.0;
}

// status -> count, and error kind -> count, over the fetches.
struct Totals {
    std::map<int, std::size_t> statuses;
    std::map<std::string, std::size_t> errors;
    std::size_t failed = 0;
    std::size_t cut_at_body_cap = 0;
};

Totals count(const CrawlReport& report) {
    Totals totals;
    for (const FetchStatistic& stat : report.fetches) {
        if (stat.cut_at_body_cap) ++totals.cut_at_body_cap;
        if (stat.failed()) {
            ++totals.failed;
            ++totals.errors[stat.error_kind == ErrorKind::none ? "internal" : sixways::to_string(stat.error_kind)];
        } else {
            ++totals.statuses[stat.status];
        }
    }
    return totals;
}

// What a URL came to, after its URL and status: the redirect, the page, or the error.
std::string describe(const FetchStatistic& stat) {
    std::string text;
    if (stat.failed()) {
        text = "error: " + stat.error;
    } else if (!stat.next_url.empty()) {
        text = "-> " + stat.next_url;
        if (stat.redirect != Redirect::queued) text += std::string(" (") + to_string(stat.redirect) + ")";
    } else {
        text = stat.content_type.empty() ? "(no content type)" : stat.content_type;
        if (!stat.encoding.empty()) text += " " + stat.encoding;
        text += "  " + std::to_string(stat.size) + " bytes";
        if (stat.content_type == "text/html" && stat.status == 200) {
            text += ", " + std::to_string(stat.num_urls) + (stat.num_urls == 1 ? " link, " : " links, ") +
                    std::to_string(stat.num_new_urls) + " new";
            if (stat.num_over_page_limit > 0) {
                text += ", " + std::to_string(stat.num_over_page_limit) + " over the page limit";
            }
            if (stat.cut_at_body_cap) text += "; cut at the body cap, later links not read";
        }
    }
    if (stat.tries > 1) text += " (" + std::to_string(stat.tries) + " tries)";
    return text;
}

// json_string (common/report.hpp) writes valid UTF-8 whatever the bytes: an error message or a
// content type may quote what a server sent.
std::string json_string_or_null(const std::string& text) { return text.empty() ? "null" : json_string(text); }

}  // namespace

CrawlReport make_report(const Crawler& crawler, bool interrupted) {
    CrawlReport report;
    for (const Url& root : crawler.options().roots) report.roots.push_back(root.to_string());
    report.fetches = crawler.done();
    std::sort(report.fetches.begin(), report.fetches.end(),
              [](const FetchStatistic& a, const FetchStatistic& b) { return a.url < b.url; });
    report.wall_s = std::chrono::duration<double>(crawler.elapsed()).count();
    report.max_tasks = crawler.options().max_tasks;
    report.most_in_flight = crawler.most_in_flight();
    report.todo = crawler.todo();
    report.interrupted = interrupted;
    report.max_pages = crawler.options().max_pages;
    report.over_page_limit = crawler.over_page_limit();
    report.body_cap = crawler.options().body_cap;
    return report;
}

std::size_t failed_urls(const CrawlReport& report) { return count(report).failed; }

std::string format_text(const CrawlReport& report) {
    // Columns: the URL padded to the longest (up to a point: one very long URL should not push
    // every line off the screen), then the status.
    std::size_t width = 0;
    for (const FetchStatistic& stat : report.fetches) width = std::max(width, stat.url.size());
    width = std::min<std::size_t>(width, 72);

    std::string out;
    for (const FetchStatistic& stat : report.fetches) {
        std::string line = stat.url;
        line.resize(std::max(width, line.size()), ' ');
        std::string status = stat.failed() ? "-" : std::to_string(stat.status);
        status.resize(3, ' ');
        out += line + "  " + status + "  " + describe(stat) + "\n";
    }

    const Totals totals = count(report);
    out += report.interrupted ? "Interrupted after " : "Finished ";
    out += std::to_string(report.fetches.size()) + (report.fetches.size() == 1 ? " URL" : " URLs");
    out += " in " + fixed(report.wall_s, 3) + " s (" + fixed(urls_per_second(report), 1) + " URLs/s)";
    out += " with max_tasks " + std::to_string(report.max_tasks) + "; at most " +
           std::to_string(report.most_in_flight) + (report.most_in_flight == 1 ? " fetch" : " fetches") +
           " in flight\n";
    if (report.interrupted) {
        out += "Not finished: " + std::to_string(report.todo) + (report.todo == 1 ? " URL" : " URLs") +
               " queued or being fetched\n";
    }
    out += "Statuses:";
    if (totals.statuses.empty()) out += " none";
    bool first = true;
    for (const auto& [status, number] : totals.statuses) {
        out += (first ? " " : ", ") + std::to_string(status) + " x " + std::to_string(number);
        first = false;
    }
    out += "\nFailed: " + std::to_string(totals.failed);
    first = true;
    for (const auto& [kind, number] : totals.errors) {
        out += (first ? " (" : ", ") + kind + " " + std::to_string(number);
        first = false;
    }
    if (!totals.errors.empty()) out += ")";
    out += "\n";
    if (report.over_page_limit > 0) {
        out += "Stopped by the page limit (--max-pages " + std::to_string(report.max_pages) + "): " +
               std::to_string(report.over_page_limit) +
               (report.over_page_limit == 1 ? " link" : " links") + " to new URLs not followed\n";
    }
    if (totals.cut_at_body_cap > 0) {
        out += "Cut at the body cap (" + std::to_string(report.body_cap) + " bytes): " +
               std::to_string(totals.cut_at_body_cap) +
               (totals.cut_at_body_cap == 1 ? " page, its" : " pages, their") + " later links not read\n";
    }
    return out;
}

std::string format_json(const CrawlReport& report) {
    const Totals totals = count(report);
    std::string out = "{\"roots\": [";
    for (std::size_t i = 0; i < report.roots.size(); ++i) out += (i ? ", " : "") + json_string(report.roots[i]);
    out += "], \"interrupted\": ";
    out += report.interrupted ? "true" : "false";
    out += ", \"urls\": " + std::to_string(report.fetches.size());
    out += ", \"wall_s\": " + fixed(report.wall_s, 3);
    out += ", \"urls_per_s\": " + fixed(urls_per_second(report), 1);
    out += ", \"max_tasks\": " + std::to_string(report.max_tasks);
    out += ", \"most_in_flight\": " + std::to_string(report.most_in_flight);
    out += ", \"todo\": " + std::to_string(report.todo);
    out += ", \"statuses\": {";
    bool first = true;
    for (const auto& [status, number] : totals.statuses) {
        out += (first ? "\"" : ", \"") + std::to_string(status) + "\": " + std::to_string(number);
        first = false;
    }
    out += "}, \"failed\": " + std::to_string(totals.failed) + ", \"errors\": {";
    first = true;
    for (const auto& [kind, number] : totals.errors) {
        out += (first ? "" : ", ") + json_string(kind) + ": " + std::to_string(number);
        first = false;
    }
    out += "}, \"max_pages\": " + (report.max_pages == 0 ? std::string("null") : std::to_string(report.max_pages));
    out += ", \"over_page_limit\": " + std::to_string(report.over_page_limit);
    out += ", \"body_cap\": " + std::to_string(report.body_cap);
    out += ", \"cut_at_body_cap\": " + std::to_string(totals.cut_at_body_cap);
    out += ", \"fetches\": [";
    first = true;
    for (const FetchStatistic& stat : report.fetches) {
        out += first ? "{" : ", {";
        first = false;
        out += "\"url\": " + json_string(stat.url);
        out += ", \"status\": " + (stat.failed() ? std::string("null") : std::to_string(stat.status));
        out += ", \"next_url\": " + json_string_or_null(stat.next_url);
        out += ", \"redirect\": " +
               (stat.redirect == Redirect::none ? std::string("null") : json_string(to_string(stat.redirect)));
        out += ", \"error\": " + json_string_or_null(stat.error);
        out += ", \"error_kind\": " +
               (stat.error_kind == ErrorKind::none ? std::string("null") : json_string(sixways::to_string(stat.error_kind)));
        out += ", \"tries\": " + std::to_string(stat.tries);
        out += ", \"size\": " + std::to_string(stat.size);
        out += ", \"content_type\": " + json_string_or_null(stat.content_type);
        out += ", \"encoding\": " + json_string_or_null(stat.encoding);
        out += ", \"num_urls\": " + std::to_string(stat.num_urls);
        out += ", \"num_new_urls\": " + std::to_string(stat.num_new_urls);
        out += ", \"num_over_page_limit\": " + std::to_string(stat.num_over_page_limit);
        out += std::string(", \"cut_at_body_cap\": ") + (stat.cut_at_body_cap ? "true" : "false") + "}";
    }
    return out + "]}";
}

}  // namespace sixways::crawler
