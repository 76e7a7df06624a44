// A web crawler on stage 06's event loop: the capstone of the 500 Lines chapter "A Web Crawler With
// asyncio Coroutines" (A. Jesse Jiryu Davis and Guido van Rossum), in C++20.
//
//   EventLoop loop;
//   Crawler crawler(loop, options);                  // the roots are queued here
//   loop.run_until_complete(crawler.crawl());         // until every URL found has been fetched
//   for (const FetchStatistic& stat : crawler.done()) ...
//
// The design is the chapter's, piece for piece:
//   - a Queue of (url, redirects left) pairs, and `seen_urls`, every URL ever queued;
//   - `max_tasks` workers, each a Task that loops: get a URL, fetch it, task_done();
//   - fetching a page queues the links on it that are in scope and not seen yet;
//   - crawl() waits on queue.join(): it returns when every URL put has been task_done(), that is
//     when the last page has been fetched and it had nothing new to add. The workers are then all
//     waiting in get(); crawl() cancels them and waits until they have finished.
//
// Why a queue and a fixed number of workers rather than a task per link? A site of 10,000 pages
// would get 10,000 connections at once. max_tasks is the politeness limit: never more than that
// many requests in flight to the server, however many links are waiting.
//
// Why no lock around seen_urls? A coroutine is suspended only at a co_await. Between checking a
// link against seen_urls and adding it, a worker does not co_await, so no other worker can run in
// between and queue the same link. With threads, that check-then-add would be a race.
//
// Names are resolved up front (CrawlerOptions::addresses): getaddrinfo blocks, and a blocked loop
// stops every worker at once. So the crawler fetches only hosts whose addresses it was given, the
// roots' (resolved by the caller before the loop starts) and any the caller added (`--resolve`).
// Those are the only hosts in scope in strict mode anyway; in lenient mode a link to a subdomain
// that was not resolved is recorded as a failure that says so. (asyncio's answer is
// loop.getaddrinfo, which runs getaddrinfo on a thread pool and wakes the loop when it is done.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "06_coroutines/event_loop.hpp"
#include "06_coroutines/fetch.hpp"
#include "06_coroutines/queue.hpp"
#include "06_coroutines/task.hpp"
#include "common/address.hpp"
#include "common/duration.hpp"
#include "common/fetch.hpp"
#include "common/url.hpp"

namespace sixways::crawler {

using coroutines::Coroutine;
using coroutines::EventLoop;
using coroutines::Task;

// What became of a redirect's target.
enum class Redirect {
    none,            // not a redirect (or a redirect without a Location header)
    queued,          // the target is queued, with one redirect less left
    already_seen,    // the target was queued before (another redirect, or a link, led there)
    limit_reached,   // no redirects left: the target is not fetched
    out_of_scope,    // another host, another scheme, or excluded: not fetched
    page_limit,      // max_pages URLs were queued already: the target is not fetched
};
const char* to_string(Redirect redirect);

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

    bool failed() const { return status == 0; }
};

// The key under which CrawlerOptions::addresses holds a host's addresses: "example.com:80".
// Lowercase, port always written.
std::string host_key(const Url& url);

// Does `url` match an exclude pattern? A pattern is a whole URL, written as the crawler writes
// URLs (lowercase host, no ":80", no fragment), in which each `*` stands for any run of characters,
// none included. No other character is special: "*.pdf", "http://example.com/private/*",
// "*?print=*". Not a regular expression, on purpose: libstdc++'s std::regex recurses once per
// character matched and ran out of stack on a link of 8 KiB. This match has no recursion, and its
// time grows with the URL's length times the pattern's, whatever either holds.
bool matches_pattern(std::string_view pattern, std::string_view url);

// Throws std::invalid_argument for an exclude pattern that could never match: every URL the crawler
// follows starts with "http://", so a pattern must start with that or with a `*`. ("\.pdf$" and
// "skip", written as regular expressions, are refused rather than silently matching nothing.)
void check_pattern(std::string_view pattern);

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
    };

    Coroutine<void> work();
    Coroutine<void> fetch(std::string url, std::size_t redirects_left);
    Coroutine<Result> fetch_with_retries(Request request, FetchStatistic& stat);
    void follow_redirect(FetchStatistic& stat, const std::string& location, std::size_t redirects_left);
    void follow_links(FetchStatistic& stat, std::string_view html);
    void add_url(const std::string& url, std::size_t redirects_left);
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
    Clock::time_point started_{};
    Clock::time_point finished_{};
};

}  // namespace sixways::crawler
