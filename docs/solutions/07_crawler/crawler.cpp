// A copy of 06_coroutines/crawler/crawler.cpp with chapter 07's exercises 3 (a depth limit) and 5
// (at most max_per_host fetches at once to one host) answered; each change is marked.
#include "docs/solutions/07_crawler/crawler.hpp"

#include <algorithm>
#include <exception>
#include <optional>
#include <stdexcept>
#include <utility>

#include "06_coroutines/gather.hpp"
#include "06_coroutines/sleep.hpp"
#include "06_coroutines/crawler/links.hpp"

namespace sixways::crawler::answers {

namespace {

// The small helpers the coroutines use; defined at the end of this file.
// "text/html; charset=UTF-8" -> {"text/html", "utf-8"}. Both lowercase; either may be empty.
struct ContentType {
    std::string media_type;
    std::string charset;
};

ContentType parse_content_type(const std::string* header);  // null: no Content-Type header
bool is_redirect(int status);
bool worth_retrying(ErrorKind kind);
bool is_ip_literal(const std::string& host);
std::string lowercase(std::string text);

// Counts the fetches in flight, for most_in_flight(), however the fetch ends (cancellation too).
class InFlight {
public:
    InFlight(std::size_t& count, std::size_t& most) : count_(count) { most = std::max(most, ++count_); }
    ~InFlight() { --count_; }
    InFlight(const InFlight&) = delete;
    InFlight& operator=(const InFlight&) = delete;

private:
    std::size_t& count_;
};

}  // namespace

// ---- The three coroutines ----

// The main coroutine: start the workers, wait until the queue's work is all done, stop the
// workers. Like a main thread that starts a pool and joins it, but without threads: the workers
// run only while this coroutine waits in join().
Coroutine<void> Crawler::crawl() {
    started_ = loop_.time();
    // Coroutines are cheap (a frame on the heap, no stack of their own), so all the workers are
    // made at once: an idle one costs about a kilobyte while it waits in get().
    std::vector<Task<void>> workers;
    workers.reserve(options_.max_tasks);
    for (std::size_t i = 0; i < options_.max_tasks; ++i) {
        workers.push_back(loop_.create_task(work(), "worker " + std::to_string(i + 1)));
    }

    bool interrupted = false;
    try {
        co_await queue_.join();  // every URL ever queued has been fetched and task_done()
    } catch (const coroutines::CancelledError&) {
        interrupted = true;  // we were cancelled (Ctrl-C): stop the workers all the same, below
    }
    finished_ = loop_.time();

    // The workers now wait in queue_.get() for a URL that will never come (or, if we were
    // interrupted, some are in the middle of a fetch). Cancelling throws CancelledError into each
    // at its co_await. We must then wait until they have finished: a cancelled task may need a
    // turn of the loop to unwind, and only then are its sockets closed. Leaving them pending would
    // get "Task was destroyed but it is pending!" when the loop goes, as in the chapter.
    for (Task<void>& worker : workers) worker.cancel();
    co_await coroutines::wait(loop_, workers);  // each ends cancelled: expected, not a failure

    if (interrupted) throw coroutines::CancelledError();
}

// One worker: take a URL, fetch it, mark it done; for ever (until crawl() cancels it, which
// happens while it waits in get()).
Coroutine<void> Crawler::work() {
    for (;;) {
        QueueItem item = co_await queue_.get();
        ++busy_workers_;
        const std::string url = item.url;
        try {
            co_await fetch(std::move(item.url), item.redirects_left, item.depth);  // Exercise 3: the depth
        } catch (const std::exception& error) {
            // fetch() turns every network error into its statistic; reaching here is a bug or an
            // exhausted machine (std::bad_alloc). Record it and go on: a worker that died would
            // never call task_done(), and join() would wait for ever.
            FetchStatistic stat;
            stat.url = url;
            stat.error = std::string("internal error: ") + error.what();
            done_.push_back(std::move(stat));
        }
        --busy_workers_;     // a cancelled worker never gets here: its URL stays unfinished
        queue_.task_done();  // the last task_done() of the crawl wakes crawl() in join()
    }
}

// Fetch one URL and deal with the answer: a redirect queues its target, an HTML page its links.
// Every way out records one FetchStatistic.
Coroutine<void> Crawler::fetch(std::string url, std::size_t redirects_left, std::size_t depth) {
    FetchStatistic stat;
    stat.url = url;
    stat.depth = depth;  // Exercise 3
    const Url target = *parse_http_url(url);  // only URLs that parse are ever queued
    const auto addresses = options_.addresses.find(host_key(target));
    if (addresses == options_.addresses.end()) {
        // A host in scope (lenient mode) that nobody resolved. Resolving it here would block the
        // loop, and every other worker with it, for as long as the DNS server takes.
        stat.error_kind = ErrorKind::resolve;
        stat.error = "resolve: " + target.host + " was not resolved before the crawl (give it with --resolve)";
        done_.push_back(std::move(stat));
        co_return;
    }

    // Named, not written inside the co_await: g++ 12 destroys an aggregate temporary in a co_await
    // expression twice (GCC PR 107288).
    Request request{target, addresses->second};
    const Result result = co_await fetch_with_retries(std::move(request), stat);
    if (!result.ok()) {
        stat.error_kind = result.error;
        stat.error = result.error_message;
        done_.push_back(std::move(stat));
        co_return;
    }

    // From here to the end there is no co_await: no other worker runs until this page's links are
    // in seen_urls and in the queue, so two pages with the same link cannot both queue it.
    const Response& response = result.response;
    stat.status = response.status;
    stat.size = response.body_bytes;
    const ContentType type = parse_content_type(response.header("content-type"));
    stat.content_type = type.media_type;
    stat.encoding = type.charset;
    const std::string* location = response.header("location");
    if (is_redirect(response.status) && location != nullptr) {
        follow_redirect(stat, *location, redirects_left);
    } else if (response.status == 200 && stat.content_type == "text/html") {
        // Only a successful HTML page is read for links (500 Lines does the same): text, JSON and
        // images have no links, and an error page's links are the site's navigation again.
        // A page longer than body_cap is read up to its last complete tag: a link cut in half
        // would name a page that does not exist. The report says which pages were cut.
        std::string_view html = response.body;
        stat.cut_at_body_cap = response.body_bytes > response.body.size();
        if (stat.cut_at_body_cap) html = html.substr(0, html.rfind('>') + 1);
        follow_links(stat, html);
    }
    done_.push_back(std::move(stat));
}

// One fetch with stage 06's fetch() (its own deadline, `timeout`, is wait_for around the
// exchange), tried again while the connection fails, up to max_tries times in all, waiting a
// little longer before each new try. Stage 06's fetch opens one connection per request and sends
// "Connection: close", so each try starts afresh.
//
// `stat` is a reference into fetch()'s frame: safe, because fetch() co_awaits this coroutine, which
// runs inside the same task and whose frame fetch()'s frame owns.
Coroutine<Result> Crawler::fetch_with_retries(Request request, FetchStatistic& stat) {
    Options fetch_options;
    fetch_options.timeout = options_.timeout;
    fetch_options.body_cap = options_.body_cap;
    Duration delay = options_.retry_delay;
    for (;;) {
        ++stat.tries;
        Result result;
        {
            // Exercise 5: a slot of this host's semaphore, held for this one try. It is taken
            // before the fetch is counted in flight, and given back (by ~Guard) before the pause
            // between two tries, however the try ends: a worker that waits to try again must not
            // keep a slot that another worker could use.
            const std::string host = host_key(request.url);
            std::optional<coroutines::Semaphore::Guard> slot;
            if (options_.max_per_host > 0) {
                coroutines::Semaphore& slots =
                    host_slots_.try_emplace(host, loop_, options_.max_per_host).first->second;
                slot.emplace(co_await slots.guard());
            }
            InFlight counting_for_host(in_flight_per_host_[host], most_per_host_[host]);
            InFlight counting(in_flight_, most_in_flight_);
            result = co_await coroutines::fetch(loop_, request, fetch_options);
        }
        if (result.ok() || !worth_retrying(result.error) || stat.tries >= options_.max_tries) {
            co_return std::move(result);
        }
        co_await coroutines::sleep(loop_, delay);
        if (delay < std::chrono::seconds(10)) delay *= 2;  // a cap: 100 tries must not wait for years
    }
}

// A redirect is not followed at once: its target is queued like a link, with one redirect less
// left. So two redirects to one page fetch it once (the second finds it in seen_urls), a redirect
// cycle ends when it comes round to a URL already seen, and a long chain ends at max_redirect.
void Crawler::follow_redirect(FetchStatistic& stat, const std::string& location, std::size_t redirects_left) {
    // Where it leads, for the report, even when it is not followed (out of scope); in normal form
    // below once it is known to be followed.
    stat.next_url = std::string(without_fragment(resolve_reference(stat.url, location)));
    const std::optional<std::string> next = url_to_follow(stat.url, location);
    if (!next) {
        stat.redirect = Redirect::out_of_scope;
        return;
    }
    stat.next_url = *next;  // in normal form
    if (seen_urls_.contains(*next)) {
        stat.redirect = Redirect::already_seen;  // we have been down this path before
    } else if (redirects_left == 0) {
        stat.redirect = Redirect::limit_reached;
    } else if (page_limit_reached()) {
        stat.redirect = Redirect::page_limit;
        ++over_page_limit_;
    } else {
        stat.redirect = Redirect::queued;
        // Exercise 3: a redirect's target keeps the depth of the URL that redirected: it is the
        // same link, moved, not a link found on a page.
        add_url(*next, redirects_left - 1, stat.depth);
    }
}

// The links of an HTML page, each once, resolved against the page's URL; the new ones are queued
// with a full allowance of redirects.
void Crawler::follow_links(FetchStatistic& stat, std::string_view html) {
    std::set<std::string> links;
    for (const std::string& link : find_links(html)) {
        if (std::optional<std::string> url = url_to_follow(stat.url, link)) links.insert(std::move(*url));
    }
    stat.num_urls = links.size();
    // Exercise 3: a page at the depth limit is read and its links counted, but none is queued. A
    // link not queued is not put in seen_urls either, so a page found deeper first can still be
    // queued when a page nearer the root links to it later.
    if (options_.max_depth && stat.depth >= *options_.max_depth) return;
    for (const std::string& link : links) {
        if (seen_urls_.contains(link)) continue;
        if (page_limit_reached()) {
            ++stat.num_over_page_limit;
            ++over_page_limit_;
            continue;
        }
        ++stat.num_new_urls;
        add_url(link, options_.max_redirect, stat.depth + 1);
    }
}

// Every URL in the queue is in seen_urls from the moment it is queued, so it is queued once.
void Crawler::add_url(const std::string& url, std::size_t redirects_left, std::size_t depth) {
    if (!seen_urls_.insert(url).second) return;
    queue_.put_nowait(QueueItem{url, redirects_left, depth});  // the queue has no limit: never waits
}

// seen_urls holds every URL ever queued, so its size is the count max_pages limits. Once it is
// reached nothing more is queued, and join() returns when the URLs queued so far are fetched:
// the crawl ends as it always does, with no fetch cut off.
bool Crawler::page_limit_reached() const {
    return options_.max_pages != 0 && seen_urls_.size() >= options_.max_pages;
}

Duration Crawler::elapsed() const {
    if (started_ == Clock::time_point{}) return Duration::zero();
    return (finished_ != Clock::time_point{} ? finished_ : loop_.time()) - started_;
}

// ---- Which URLs are followed ----

std::optional<std::string> Crawler::url_to_follow(const std::string& base, std::string_view link) const {
    const std::string absolute(without_fragment(resolve_reference(base, link)));
    const std::optional<Url> url = parse_http_url(absolute);
    if (!url || !allowed(*url)) return std::nullopt;
    return url->to_string();
}

bool Crawler::url_allowed(const std::string& url) const {
    const std::optional<Url> parsed = parse_http_url(without_fragment(url));
    return parsed && allowed(*parsed);
}

bool Crawler::allowed(const Url& url) const {
    const std::string text = url.to_string();
    // Servers refuse longer request lines anyway (414 URI Too Long: nginx and Apache stop at about
    // 8 KiB).
    if (text.size() > max_url_length) return false;
    if (!host_in_scope(url)) return false;
    return std::none_of(options_.exclude.begin(), options_.exclude.end(),
                        [&text](const std::string& pattern) { return matches_pattern(pattern, text); });
}

// The scope: which hosts the crawl stays on. Always the port of a root and, for the host:
//   strict:  exactly a root's host ("example.com" only; host names compare case-insensitively);
//   lenient: a root's domain or any name under it, where the domain is the root's host without a
//            leading "www.". Root www.example.com or example.com: example.com, www.example.com,
//            docs.example.com and a.b.example.com are in; example.org and badexample.com are not.
// A root given as an IP address matches only itself, in either mode. (500 Lines' lenient mode
// compares the last two labels of the name instead, which puts all of .co.uk in scope for a root
// at bbc.co.uk; taking the root's own name avoids that without a list of public suffixes.)
bool Crawler::host_in_scope(const Url& url) const {
    const std::string host = lowercase(url.host);
    for (const Url& root : options_.roots) {
        if (url.port != root.port) continue;
        if (host == root.host) return true;
        if (options_.strict || is_ip_literal(root.host)) continue;
        const std::string domain = root.host.starts_with("www.") ? root.host.substr(4) : root.host;
        if (host == domain || host.ends_with("." + domain)) return true;
    }
    return false;
}

// ---- The constructor, and the small helpers ----

Crawler::Crawler(EventLoop& loop, CrawlerOptions options)
    : loop_(loop), options_(std::move(options)), queue_(loop) {
    if (options_.max_tasks == 0) throw std::invalid_argument("max_tasks must be at least 1");
    if (options_.max_tries == 0) throw std::invalid_argument("max_tries must be at least 1");
    for (const std::string& pattern : options_.exclude) check_pattern(pattern);
    for (Url& root : options_.roots) {
        root.host = lowercase(root.host);
        if (!options_.addresses.contains(host_key(root))) {
            throw std::invalid_argument("no address for the root " + root.to_string() + " (resolve it first)");
        }
    }
    // The roots are queued like any link (500 Lines does it in __init__ too), so that the first
    // join() has something to wait for. A root is fetched even if `exclude` matches it, but not
    // past max_pages.
    for (const Url& root : options_.roots) {
        if (page_limit_reached() && !seen_urls_.contains(root.to_string())) {
            ++over_page_limit_;
            continue;
        }
        add_url(root.to_string(), options_.max_redirect, 0);  // Exercise 3: depth 0
    }
}

namespace {

char to_lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

std::string lowercase(std::string text) {
    for (char& c : text) c = to_lower(c);
    return text;
}

// The statuses whose Location the crawler follows. 304 Not Modified and 305 Use Proxy are 3xx
// too, but they do not name another page.
bool is_redirect(int status) {
    return status == 300 || status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

// Failures worth another try: the connection could not be made, or broke. Not a timeout (the server
// is slow, and asking again at once only adds to its load and to our wait), not a protocol error
// (the same server sends the same garbage again), not an HTTP error status (that is an answer).
bool worth_retrying(ErrorKind kind) {
    return kind == ErrorKind::connect || kind == ErrorKind::send || kind == ErrorKind::receive;
}

std::string_view trim(std::string_view text) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
    return text;
}

ContentType parse_content_type(const std::string* header) {
    ContentType type;
    if (header == nullptr) return type;
    std::string_view rest = *header;
    const std::size_t semicolon = rest.find(';');
    type.media_type = lowercase(std::string(trim(rest.substr(0, semicolon))));
    while (rest.find(';') != std::string_view::npos) {
        rest.remove_prefix(rest.find(';') + 1);
        std::string_view parameter = trim(rest.substr(0, rest.find(';')));
        const std::size_t equals = parameter.find('=');
        if (equals == std::string_view::npos) continue;
        if (lowercase(std::string(trim(parameter.substr(0, equals)))) != "charset") continue;
        std::string_view value = trim(parameter.substr(equals + 1));
        if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
        type.charset = lowercase(std::string(value));
    }
    return type;
}

// An IP address written as the host: "127.0.0.1", or "::1" (a URL's IPv6 literal, unbracketed).
// Lenient mode's domain rule makes no sense for these: 10.0.0.1 is no "subdomain" of 0.0.1.
bool is_ip_literal(const std::string& host) {
    return host.find(':') != std::string::npos ||
           std::all_of(host.begin(), host.end(), [](char c) { return (c >= '0' && c <= '9') || c == '.'; });
}

}  // namespace

}  // namespace sixways::crawler::answers
