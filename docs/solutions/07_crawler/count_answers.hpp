// Chapter 07, exercise 1: a program on the crawler's library. It runs a crawl on a loop of its own,
// then counts what came back:
//
//   CrawlerOptions options;                           // roots, and their addresses, resolved first
//   std::vector<FetchStatistic> done = crawl_to_the_end(options);
//   count_answers(done);   // {"2xx": 22, "3xx": 8, "4xx": 2, "5xx": 0, "failed": 0} for /site/
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "06_coroutines/crawler/crawler.hpp"

namespace sixways::crawler {

// Crawls from options.roots until every URL found has been fetched, and returns done(). Throws
// what the Crawler's constructor throws (a root without an address, a bad exclude).
std::vector<FetchStatistic> crawl_to_the_end(CrawlerOptions options);

// How many URLs got each class of answer: "1xx" to "5xx" by status, and "failed" for those that
// got none (a refused connection, a timeout, a malformed response). "2xx" to "5xx" and "failed" are
// always there, 0 if no URL is in them; "1xx" only if a URL got one.
std::map<std::string, std::size_t> count_answers(const std::vector<FetchStatistic>& done);

}  // namespace sixways::crawler
