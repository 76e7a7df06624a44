// The crawler's report, like 500 Lines' reporting.py: one line per URL, sorted by URL, then the
// totals. Or, with --json, the same as one JSON object for a program to read.
//
//   http://127.0.0.1:8080/site/           200  text/html utf-8  611 bytes, 12 links, 11 new
//   http://127.0.0.1:8080/site/alias-2    302  -> http://127.0.0.1:8080/site/shared (already seen)
//   http://127.0.0.1:8080/site/missing    404  text/html  62 bytes
//   ...
//   Finished 32 URLs in 0.912 s (35.1 URLs/s) with max_tasks 10; at most 10 fetches in flight
//   Statuses: 200 x 22, 301 x 4, 302 x 4, 404 x 2
//   Failed: 0
// and, only when they happened:
//   Stopped by the page limit (--max-pages 20): 14 links to new URLs not followed
//   Cut at the body cap (4194304 bytes): 1 page, its later links not read
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "06_coroutines/crawler/crawler.hpp"

namespace sixways::crawler {

struct CrawlReport {
    std::vector<std::string> roots;
    std::vector<FetchStatistic> fetches;  // sorted by URL
    double wall_s = 0;
    std::size_t max_tasks = 0;
    std::size_t most_in_flight = 0;
    std::size_t todo = 0;        // URLs queued or being fetched when the report was made
    bool interrupted = false;    // the crawl was stopped (Ctrl-C) before it finished
    std::size_t max_pages = 0;   // 0: no limit
    std::size_t over_page_limit = 0;  // links and redirects not followed because of max_pages
    std::size_t body_cap = 0;    // bytes of a page read for links
};

// What `crawler` has done so far (the whole crawl, or as far as it got before an interruption).
CrawlReport make_report(const Crawler& crawler, bool interrupted);

// URLs that got no response (after all their tries): what makes the crawl exit with status 1.
std::size_t failed_urls(const CrawlReport& report);

// The report for people: a line per URL, then the totals; ends with a newline.
std::string format_text(const CrawlReport& report);

// Exactly one JSON object, no trailing newline:
//   {"roots": [...], "interrupted": false, "urls": 32, "wall_s": 0.912, "urls_per_s": 35.1,
//    "max_tasks": 10, "most_in_flight": 10, "todo": 0, "statuses": {"200": 22, ...},
//    "failed": 0, "errors": {"connect": 1, ...},
//    "max_pages": 100 or null, "over_page_limit": 0, "body_cap": 4194304, "cut_at_body_cap": 0,
//    "fetches": [{"url": ..., "status": 200 or null, "next_url": ... or null,
//                 "redirect": "queued" or null, "error": ... or null, "error_kind": ... or null,
//                 "tries": 1, "size": 611, "content_type": "text/html" or null,
//                 "encoding": "utf-8" or null, "num_urls": 12, "num_new_urls": 11,
//                 "num_over_page_limit": 0, "cut_at_body_cap": false}, ...]}
std::string format_json(const CrawlReport& report);

}  // namespace sixways::crawler
