// Chapter 07, exercise 1: see count_answers.hpp.
#include "docs/solutions/07_crawler/count_answers.hpp"

#include <utility>

#include "06_coroutines/event_loop.hpp"
#include "06_coroutines/task.hpp"

namespace sixways::crawler {

std::vector<FetchStatistic> crawl_to_the_end(CrawlerOptions options) {
    coroutines::EventLoop loop;
    Crawler crawler(loop, std::move(options));
    // run_until_complete runs the loop until crawl() returns: every URL queued has been fetched
    // and every worker has finished. The crawler, and then the loop, go when this function ends.
    loop.run_until_complete(crawler.crawl());
    return crawler.done();
}

std::map<std::string, std::size_t> count_answers(const std::vector<FetchStatistic>& done) {
    // Every class the exercise asks for is printed, even when no URL is in it ("failed 0").
    std::map<std::string, std::size_t> counts = {{"2xx", 0}, {"3xx", 0}, {"4xx", 0}, {"5xx", 0}, {"failed", 0}};
    for (const FetchStatistic& stat : done) {
        if (stat.failed()) {
            ++counts["failed"];  // status 0: no response came
        } else {
            ++counts[std::to_string(stat.status / 100) + "xx"];  // 404 -> "4xx"
        }
    }
    return counts;
}

}  // namespace sixways::crawler
