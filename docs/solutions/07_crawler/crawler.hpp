// Chapter 07's exercises 3 and 5, answered on a copy of the crawler (06_coroutines/crawler/
// crawler.hpp and crawler.cpp), in a namespace of its own so that it can sit beside the original:
//
//   - exercise 3, a depth limit: every URL carries its depth (a root is at depth 0, a link found on
//     a page at depth d is at depth d + 1, a redirect's target keeps the depth of the URL that
//     redirected); with max_depth set, a page at that depth is read but its links are not queued;
//   - exercise 5, at most max_per_host fetches at once to one host: a Semaphore per host, held for
//     one try of one fetch.
//
// Everything else is the crawler as it is at commit 81b7437 (with its page limit, max_pages), but
// for the exclude patterns, which both match with the original's matches_pattern and check_pattern,
// shared rather than copied. Each change is marked "Exercise 3" or "Exercise 5"; `diff -u
// 06_coroutines/crawler/crawler.cpp docs/solutions/07_crawler/crawler.cpp` shows them (and any
// later change to the crawler itself).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "06_coroutines/crawler/crawler.hpp"  // Redirect, to_string(Redirect), host_key, the patterns
#include "06_coroutines/event_loop.hpp"
#include "06_coroutines/fetch.hpp"
#include "06_coroutines/optional/semaphore.hpp"
#include "06_coroutines/queue.hpp"
#include "06_coroutines/task.hpp"
#include "common/address.hpp"
#include "common/duration.hpp"
#include "common/fetch.hpp"
#include "common/url.hpp"

namespace sixways::crawler::answers {

using coroutines::Coroutine;
using coroutines::EventLoop;
using coroutines::Task;
using crawler::check_pattern;
using crawler::host_key;
using crawler::matches_pattern;
using crawler::Redirect;

// What fetching one URL came to: 500 Lines' FetchStatistic, one per URL in done().
struct FetchStatistic {
    std::string url;                   // as fetched: "http://127.0.0.1:8080/site/about"
    std::string next_url;              // a redirect's Location, resolved against `url`
    Redirect redirect = Redirect::none;
    int status = 0;                    // 0: no response came (see error)
    ErrorKind error_kind = ErrorKind::none;
    std::string error;                 // "connect: Connection refused"; empty if a response came
    std::size_t tries = 0;             // fetch attempts made: 1 unless a connection failed
    std::uint64_t size = 0;            // body bytes
    std::string content_type;          // media type, lowercase, without parameters: "text/html"
    std::string encoding;              // its charset parameter if there is one: "utf-8"
    std::size_t num_urls = 0;          // distinct links on the page that are in scope
    std::size_t num_new_urls = 0;      // of those, not seen before: queued by this page
    std::size_t num_over_page_limit = 0;  // not seen before either, but not queued: max_pages
    bool cut_at_body_cap = false;      // an HTML page longer than body_cap: links after it not read
    std::size_t depth = 0;             // Exercise 3: links followed from a root to reach it

    bool failed() const { return status == 0; }
};

struct CrawlerOptions {
    std::vector<Url> roots;  // where to start; their hosts are the crawl's scope
    // Addresses of every host the crawler may connect to, by host_key, resolved before the loop
    // starts. A root's host must be here.
    std::map<std::string, std::vector<Address>> addresses;
    std::vector<std::string> exclude;  // skip URLs that match any of these (see matches_pattern)
    bool strict = true;             // which hosts are in scope: see Crawler::host_in_scope
    std::size_t max_redirect = 10;  // redirects followed from one URL found on a page
    std::size_t max_tries = 4;      // fetch attempts per URL when the connection fails
    std::size_t max_tasks = 10;     // workers: at most this many fetches in flight (one socket each;
                                    // the crawl program caps it at what the descriptor limit allows)
    Duration timeout = std::chrono::seconds(10);          // per fetch attempt
    Duration retry_delay = std::chrono::milliseconds(100);  // before the 2nd try; doubles up to 10 s or so
    // At most this many URLs are ever queued (the roots included); links and redirects found after
    // that are counted, not followed, and the crawl ends once those URLs are fetched. 0: no limit.
    // A site that makes up pages (a calendar, /deep/1 linking /deep/2 ...) never ends without one.
    std::size_t max_pages = 0;
    // Body bytes kept per page for finding links (a longer page is counted, read for links only
    // this far, up to its last complete tag, and marked cut_at_body_cap).
    std::size_t body_cap = 4 * 1024 * 1024;
    // Exercise 3: the links of a page at this depth are not queued (0: only the roots are fetched).
    // No limit if empty.
    std::optional<std::size_t> max_depth;
    // Exercise 5: at most this many fetches in flight to one host (host_key: name and port) at
    // once. 0: no limit but max_tasks.
    std::size_t max_per_host = 0;
};

class Crawler {
public:
    // Longer URLs are never followed.
    static constexpr std::size_t max_url_length = 8 * 1024;

    // Queues the roots. Throws std::invalid_argument for max_tasks or max_tries of 0, or a root
    // whose host has no addresses, or an `exclude` pattern that check_pattern refuses.
    // The loop, and this crawler, must outlive every task crawl() starts (the loop runs inside
    // run_until_complete, so this holds for the usual use above).
    Crawler(EventLoop& loop, CrawlerOptions options);
    Crawler(const Crawler&) = delete;
    Crawler& operator=(const Crawler&) = delete;

    // Runs until every URL found has been fetched. Cancelling it (Ctrl-C) cancels the workers,
    // waits until they have finished (their sockets are closed), and then throws CancelledError;
    // done() keeps what was fetched until then.
    Coroutine<void> crawl();

    // Would a link to this absolute URL be followed? Only http:// URLs, on a host in scope, that no
    // `exclude` pattern matches, up to max_url_length. (Whether the host has an address is not asked
    // here: see above.)
    bool url_allowed(const std::string& url) const;

    // One statistic per URL fetched (or given up on), in the order they finished.
    const std::vector<FetchStatistic>& done() const { return done_; }
    // URLs not finished: still queued, or being fetched. 0 after a complete crawl.
    std::size_t todo() const { return queue_.size() + busy_workers_; }
    // The most fetches that were in flight at once: never more than max_tasks.
    std::size_t most_in_flight() const { return most_in_flight_; }
    // Exercise 5: the most fetches that were in flight at once to each host, by host_key: never
    // more than max_per_host when it is set.
    const std::map<std::string, std::size_t>& most_in_flight_per_host() const { return most_per_host_; }
    // Links and redirect targets that were new but not queued because max_pages URLs had been:
    // each counted once per page (or redirect) that found it. 0 when the limit did not stop anything.
    std::size_t over_page_limit() const { return over_page_limit_; }
    // From the start of crawl() until join() returned (or until now, while it runs).
    Duration elapsed() const;
    const CrawlerOptions& options() const { return options_; }

private:
    struct QueueItem {
        std::string url;
        std::size_t redirects_left;
        std::size_t depth;  // Exercise 3
    };

    Coroutine<void> work();
    Coroutine<void> fetch(std::string url, std::size_t redirects_left, std::size_t depth);
    Coroutine<Result> fetch_with_retries(Request request, FetchStatistic& stat);
    void follow_redirect(FetchStatistic& stat, const std::string& location, std::size_t redirects_left);
    void follow_links(FetchStatistic& stat, std::string_view html);
    void add_url(const std::string& url, std::size_t redirects_left, std::size_t depth);
    bool page_limit_reached() const;
    bool allowed(const Url& url) const;
    bool host_in_scope(const Url& url) const;
    // The absolute URL of a link (or a Location) found at `base`, in normal form, if it is to be
    // followed.
    std::optional<std::string> url_to_follow(const std::string& base, std::string_view link) const;

    EventLoop& loop_;
    CrawlerOptions options_;
    coroutines::Queue<QueueItem> queue_;
    std::set<std::string> seen_urls_;
    std::vector<FetchStatistic> done_;
    std::size_t busy_workers_ = 0;
    std::size_t in_flight_ = 0;
    std::size_t most_in_flight_ = 0;
    std::size_t over_page_limit_ = 0;
    // Exercise 5: one semaphore per host, made when the host is first fetched (a Semaphore cannot
    // be moved, so it is built in place in the map, whose elements never move); and the counts.
    std::map<std::string, coroutines::Semaphore> host_slots_;
    std::map<std::string, std::size_t> in_flight_per_host_;
    std::map<std::string, std::size_t> most_per_host_;
    Clock::time_point started_{};
    Clock::time_point finished_{};
};

}  // namespace sixways::crawler::answers
