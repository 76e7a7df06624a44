// Tests of chapter 07's code exercises: 1 (counting the answers, a program on the crawler's
// library), 3 (a depth limit) and 5 (at most N fetches at once per host), the last two on the copy
// of the crawler in this folder. Sites are the lab server's /site/, in-process, or a TestSite
// (06_coroutines/crawler/tests/test_site.hpp), which counts the requests it receives, so "not
// fetched" and "at most N at once" are checked on the server's side.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "06_coroutines/crawler/tests/test_site.hpp"
#include "06_coroutines/task.hpp"
#include "docs/solutions/07_crawler/count_answers.hpp"
#include "docs/solutions/07_crawler/crawler.hpp"
#include "lab/labserver.hpp"

namespace sixways::crawler {
namespace {

using namespace std::chrono_literals;
using testing::Page;
using testing::TestSite;

// ---- Exercise 1: count the answers ----

TEST(CountAnswers, TheLabSiteGives22Successes8Redirects2NotFoundAndNoFailure) {
    lab::LabServerOptions server_options;
    server_options.hosts = {"127.0.0.1"};
    server_options.port = 0;
    lab::LabServer server(server_options);
    server.start();

    CrawlerOptions options;
    options.roots = {parse_url(server.url("/site/"))};
    options.addresses[host_key(options.roots[0])] = resolve(options.roots[0]);
    options.timeout = 5s;
    // Every class is printed, "failed 0" included.
    const std::map<std::string, std::size_t> expected = {
        {"2xx", 22}, {"3xx", 8}, {"4xx", 2}, {"5xx", 0}, {"failed", 0}};
    EXPECT_EQ(count_answers(crawl_to_the_end(options)), expected);
}

TEST(CountAnswers, CountsServerErrorsAndFailuresApart) {
    TestSite site;
    site.add_page("/", {"/ok", "/gone", "/broken", "/dropped"});
    site.add("/ok", Page{.content_type = "text/plain", .body = "fine"});
    site.add("/broken", Page{.status = 500, .content_type = "text/plain", .body = "oops"});
    site.add("/dropped", Page{.body = "never sent", .drop_first = 1000});  // every connection closed
    // "/gone" is not in the table: 404.
    CrawlerOptions options;
    options.roots = {parse_url(site.url("/"))};
    options.addresses[host_key(options.roots[0])] = {site.address()};
    options.max_tries = 1;  // one closed connection is a failure: no retry
    options.timeout = 2s;
    const std::map<std::string, std::size_t> expected = {{"2xx", 2}, {"3xx", 0}, {"4xx", 1}, {"5xx", 1}, {"failed", 1}};
    EXPECT_EQ(count_answers(crawl_to_the_end(options)), expected);
    EXPECT_EQ(site.requests_for("/dropped"), 1u);
}

// ---- Exercises 3 and 5: the copy of the crawler ----

// One crawl with the copy, to its end or until `cancel_after`, with a watchdog; then checks that
// nothing was left behind: no worker destroyed while pending (which says so on stderr), no timer,
// no socket.
struct Crawl {
    explicit Crawl(const TestSite& site, const std::vector<std::string>& hosts = {"127.0.0.1"}) {
        for (const std::string& host : hosts) {
            options.roots.push_back(parse_url(site.url("/", host)));
            options.addresses[host_key(options.roots.back())] = {site.address()};
        }
        options.timeout = 5s;
        options.retry_delay = 10ms;
    }

    void run(Duration cancel_after = Duration::zero()) {
        ::testing::internal::CaptureStderr();
        crawler = std::make_unique<answers::Crawler>(loop, options);
        coroutines::Task<void> crawling = loop.create_task(crawler->crawl(), "crawl");
        bool watchdog_fired = false;
        {
            auto on_watchdog = [&watchdog_fired, crawling]() mutable {
                watchdog_fired = true;
                crawling.cancel();
            };
            auto on_cancel = [crawling]() mutable { crawling.cancel(); };
            coroutines::TimerGuard watchdog(loop.call_later(20s, on_watchdog));
            coroutines::TimerGuard canceller(cancel_after > Duration::zero() ? loop.call_later(cancel_after, on_cancel)
                                                                             : coroutines::TimerHandle());
            try {
                loop.run_until_complete(crawling);
            } catch (const coroutines::CancelledError&) {
                interrupted = true;
            }
        }
        const std::string errors = ::testing::internal::GetCapturedStderr();
        EXPECT_EQ(errors.find("Task was destroyed but it is pending!"), std::string::npos) << errors;
        EXPECT_FALSE(watchdog_fired) << "the crawl did not finish within 20 s";
        EXPECT_EQ(loop.pending_timers(), 0u) << "a timer was left behind";
        EXPECT_EQ(loop.watched_descriptors(), 0u) << "a socket is still watched";
    }

    // The paths fetched (URLs on the site's 127.0.0.1 name), and the depth of each.
    std::map<std::string, std::size_t> depths(const TestSite& site) const {
        std::map<std::string, std::size_t> found;
        const std::string prefix = site.url("");
        for (const answers::FetchStatistic& stat : crawler->done()) {
            EXPECT_TRUE(stat.url.starts_with(prefix)) << stat.url;
            found[stat.url.substr(prefix.size())] = stat.depth;
        }
        return found;
    }

    answers::CrawlerOptions options;
    coroutines::EventLoop loop;
    std::unique_ptr<answers::Crawler> crawler;
    bool interrupted = false;
};

// "/" -> "/a" -> "/b" -> "/c", and "/" -> "/r", a redirect to "/s", which links to "/t".
void add_deep_site(TestSite& site) {
    site.add_page("/", {"/a", "/r"});
    site.add_page("/a", {"/b"});
    site.add_page("/b", {"/c"});
    site.add_page("/c", {});
    site.add_redirect("/r", "/s");
    site.add_page("/s", {"/t"});
    site.add_page("/t", {});
}

TEST(DepthLimit, WithoutALimitEveryPageIsFetchedAndKnowsItsDepth) {
    TestSite site;
    add_deep_site(site);
    Crawl crawl(site);
    crawl.run();
    const std::map<std::string, std::size_t> expected = {{"/", 0}, {"/a", 1}, {"/b", 2}, {"/c", 3},
                                                         {"/r", 1}, {"/s", 1}, {"/t", 2}};
    EXPECT_EQ(crawl.depths(site), expected);
}

TEST(DepthLimit, StopsQueueingLinksBelowMaxDepthButARedirectKeepsItsDepth) {
    TestSite site;
    add_deep_site(site);
    Crawl crawl(site);
    crawl.options.max_depth = 1;
    crawl.run();
    // "/s" is at depth 1, like "/r" that redirected to it; the links of "/a" and "/s" (depth 2)
    // are not followed.
    const std::map<std::string, std::size_t> expected = {{"/", 0}, {"/a", 1}, {"/r", 1}, {"/s", 1}};
    EXPECT_EQ(crawl.depths(site), expected);
    EXPECT_EQ(site.requests_for("/b"), 0u);
    EXPECT_EQ(site.requests_for("/t"), 0u);
    EXPECT_EQ(site.total_requests(), 4u);
    EXPECT_EQ(crawl.crawler->todo(), 0u);
}

TEST(DepthLimit, ZeroFetchesOnlyTheRoots) {
    TestSite site;
    add_deep_site(site);
    Crawl crawl(site);
    crawl.options.max_depth = 0;
    crawl.run();
    const std::map<std::string, std::size_t> expected = {{"/", 0}};
    EXPECT_EQ(crawl.depths(site), expected);
    EXPECT_EQ(site.total_requests(), 1u);
}

TEST(DepthLimit, ALinkRefusedAsTooDeepIsFetchedWhenANearerPageLinksToIt) {
    // "/deep" is first found on "/a/b" (depth 2, so "/deep" would be at depth 3: refused), then on
    // "/slow" (depth 1), which answers later: "/deep" at depth 2 is allowed, and must be fetched.
    TestSite site;
    site.add_page("/", {"/a", "/slow"});
    site.add_page("/a", {"/a/b"});
    site.add_page("/a/b", {"/deep"});
    site.add("/slow", Page{.body = R"(<a href="/deep">deep</a>)", .delay = 300ms});
    site.add_page("/deep", {});
    Crawl crawl(site);
    crawl.options.max_depth = 2;
    crawl.run();
    const std::map<std::string, std::size_t> expected = {{"/", 0}, {"/a", 1}, {"/slow", 1}, {"/a/b", 2}, {"/deep", 2}};
    EXPECT_EQ(crawl.depths(site), expected);
    EXPECT_EQ(site.requests_for("/deep"), 1u);
}

// One TestSite under two names; each root links to three pages that take a while to answer.
void add_slow_pages(TestSite& site) {
    site.add_page("/", {"/s1", "/s2", "/s3"});
    for (const char* path : {"/s1", "/s2", "/s3"}) site.add(path, Page{.body = "slow", .delay = 500ms});
}

TEST(PerHostLimit, NeverHasMoreThanMaxPerHostFetchesInFlightToOneHost) {
    TestSite site;
    add_slow_pages(site);
    Crawl crawl(site, {"a.test", "b.test"});
    crawl.options.max_tasks = 10;
    crawl.options.max_per_host = 2;
    crawl.run();
    EXPECT_EQ(crawl.crawler->done().size(), 8u);  // two roots and three pages, under each name
    for (const char* path : {"/s1", "/s2", "/s3"}) EXPECT_EQ(site.requests_for(path), 2u) << path;
    const auto& per_host = crawl.crawler->most_in_flight_per_host();
    ASSERT_EQ(per_host.size(), 2u);
    for (const auto& [host, most] : per_host) EXPECT_LE(most, 2u) << host;
    EXPECT_LE(site.most_in_flight(), 4u);  // as the server counted: two per name
}

TEST(PerHostLimit, WithoutItTheSameCrawlHasMoreInFlightToOneHost) {
    // The control for the test above: the same crawl with no per-host limit has all three slow
    // pages of each name in flight at once (the test above would fail without its semaphore).
    TestSite site;
    add_slow_pages(site);
    Crawl crawl(site, {"a.test", "b.test"});
    crawl.options.max_tasks = 10;
    crawl.run();
    EXPECT_EQ(crawl.crawler->done().size(), 8u);
    EXPECT_GT(site.most_in_flight(), 4u);
}

TEST(PerHostLimit, ACrawlCancelledWhileWorkersWaitForASlotStopsCleanly) {
    // Max one fetch per host: while one slow page is fetched, two workers wait for the host's
    // slot. Cancelling the crawl then must stop them too, and leave nothing behind (run() checks).
    TestSite site;
    add_slow_pages(site);
    Crawl crawl(site);
    crawl.options.max_per_host = 1;
    crawl.run(200ms);
    EXPECT_TRUE(crawl.interrupted);
    EXPECT_EQ(crawl.crawler->todo(), 3u);  // the three slow pages: one being fetched, two waiting
    EXPECT_EQ(site.most_in_flight(), 1u);
}

// The copy keeps the original's page limit. With one worker the queue is served in order: "/",
// then "/a" (which queues "/b", the 4th URL), then "/r", whose target "/s" is over the limit. "/b"
// is at the depth limit, so its link to "/c" is not read, and not counted over the page limit.
TEST(Copy, KeepsTheOriginalsPageLimitBesideTheDepthLimit) {
    TestSite site;
    add_deep_site(site);
    Crawl crawl(site);
    crawl.options.max_tasks = 1;
    crawl.options.max_depth = 2;
    crawl.options.max_pages = 4;
    crawl.run();
    const std::map<std::string, std::size_t> expected = {{"/", 0}, {"/a", 1}, {"/b", 2}, {"/r", 1}};
    EXPECT_EQ(crawl.depths(site), expected);
    EXPECT_EQ(site.total_requests(), 4u);
    EXPECT_EQ(site.requests_for("/s"), 0u);
    EXPECT_EQ(crawl.crawler->over_page_limit(), 1u);
    for (const answers::FetchStatistic& stat : crawl.crawler->done()) {
        if (stat.url == site.url("/r")) {
            EXPECT_EQ(stat.redirect, Redirect::page_limit);
        }
    }
}

// The copy matches its exclude patterns as the original does, without recursion: as a std::regex,
// ([a-z]|[0-9]|-|_|\.)*\.(zip|pdf)$ ran out of stack on a link of the longest length followed.
TEST(Copy, MatchesItsExcludeAgainstTheLongestLinkItFollows) {
    TestSite site;
    const std::string longest = "/" + std::string(answers::Crawler::max_url_length - site.url("/").size(), 'a');
    site.add_page("/", {longest, "/paper.pdf", "/data.zip"});
    site.add_page(longest, {});
    Crawl crawl(site);
    crawl.options.exclude = {"*.zip", "*.pdf"};
    crawl.run();
    EXPECT_EQ(site.url(longest).size(), answers::Crawler::max_url_length);
    EXPECT_EQ(site.requests_for(longest), 1u);
    EXPECT_EQ(site.requests_for("/paper.pdf"), 0u);
    EXPECT_EQ(site.requests_for("/data.zip"), 0u);
}

TEST(Copy, WithNeitherLimitItStillFindsTheLabSitesThirtyTwoUrlsEachOnce) {
    lab::LabServerOptions server_options;
    server_options.hosts = {"127.0.0.1"};
    server_options.port = 0;
    lab::LabServer server(server_options);
    server.start();

    answers::CrawlerOptions options;
    options.roots = {parse_url(server.url("/site/"))};
    options.addresses[host_key(options.roots[0])] = resolve(options.roots[0]);
    options.timeout = 5s;
    coroutines::EventLoop loop;
    answers::Crawler crawler(loop, options);
    loop.run_until_complete(crawler.crawl());
    std::set<std::string> urls;
    for (const answers::FetchStatistic& stat : crawler.done()) urls.insert(stat.url);
    EXPECT_EQ(urls.size(), 32u);
    EXPECT_EQ(crawler.done().size(), 32u);
    EXPECT_EQ(server.stats().requests, 32u);
}

}  // namespace
}  // namespace sixways::crawler
