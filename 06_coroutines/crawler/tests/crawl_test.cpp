// Crawls of small test sites: the cases of 500 Lines' test.py (link, link cycle, prohibited host,
// several roots, redirects, redirect cycle, redirect join, max_tasks, max_tries, non-HTML,
// non-HTTP links) and a few more. Each site is a TestSite (test_site.hpp) on loopback, which counts
// what it was asked, so "fetched once" and "never more than max_tasks at once" are checked on the
// server's side, not taken from the crawler's word.
#include <arpa/inet.h>
#include <netinet/in.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "06_coroutines/crawler/crawler.hpp"
#include "06_coroutines/crawler/report.hpp"
#include "06_coroutines/crawler/tests/test_site.hpp"
#include "06_coroutines/task.hpp"
#include "common/json_reader.hpp"

namespace sixways::crawler {
namespace {

using namespace std::chrono_literals;
using testing::Page;
using testing::TestSite;

// One crawl of a TestSite, with a watchdog: a crawl that has not finished after 20 s is cancelled
// and fails the test instead of hanging it.
class Crawl {
public:
    Crawl(const TestSite& site, const std::vector<std::string>& roots) : site_(site) {
        for (const std::string& root : roots) {
            options.roots.push_back(parse_url(root));
            options.addresses[host_key(options.roots.back())] = {site.address()};
        }
        options.timeout = 2s;
        options.retry_delay = 10ms;
    }

    // Like --resolve HOST:PORT:127.0.0.1, for a host name that is not a root.
    void resolve(const std::string& host) {
        options.addresses[host_key(parse_url(site_.url("/", host)))] = {site_.address()};
    }

    // Runs the crawl to its end (or until `cancel_after`, if given), then checks that nothing was
    // left behind: every worker finished (none destroyed while pending, which says so on stderr),
    // no timer, no socket.
    void run(Duration cancel_after = Duration::zero()) {
        ::testing::internal::CaptureStderr();
        run_and_check(cancel_after);
        const std::string errors = ::testing::internal::GetCapturedStderr();
        EXPECT_EQ(errors.find("Task was destroyed but it is pending!"), std::string::npos) << errors;
    }

    const std::vector<FetchStatistic>& done() const { return crawler->done(); }

    // The statistic of `url` (a path on the site's 127.0.0.1 URL, or a whole URL).
    FetchStatistic stat(const std::string& url) const {
        const std::string full = url.starts_with("http://") ? url : site_.url(url);
        for (const FetchStatistic& stat : done()) {
            if (stat.url == full) return stat;
        }
        ADD_FAILURE() << "no statistic for " << full;
        return {};
    }
    bool fetched(const std::string& url) const {
        const std::string full = url.starts_with("http://") ? url : site_.url(url);
        return std::any_of(done().begin(), done().end(), [&](const FetchStatistic& s) { return s.url == full; });
    }

    CrawlerOptions options;
    coroutines::EventLoop loop;
    std::unique_ptr<Crawler> crawler;
    bool interrupted = false;

private:
    void run_and_check(Duration cancel_after) {
        crawler = std::make_unique<Crawler>(loop, options);
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
        EXPECT_FALSE(watchdog_fired) << "the crawl did not finish within 20 s";
        EXPECT_EQ(loop.pending_timers(), 0u) << "a timer was left behind";
        EXPECT_EQ(loop.watched_descriptors(), 0u) << "a socket is still watched";
    }

    const TestSite& site_;
};

TEST(Crawl, FollowsALinkToAMissingPageAndRecordsIts404) {
    TestSite site;
    site.add_page("/", {"/foo"});
    Crawl crawl(site, {site.url("/")});
    crawl.run();
    ASSERT_EQ(crawl.done().size(), 2u);
    const FetchStatistic root = crawl.stat("/");
    EXPECT_EQ(root.status, 200);
    EXPECT_EQ(root.num_urls, 1u);
    EXPECT_EQ(root.num_new_urls, 1u);
    EXPECT_EQ(root.content_type, "text/html");
    EXPECT_EQ(root.encoding, "utf-8");
    EXPECT_EQ(crawl.stat("/foo").status, 404);
    EXPECT_EQ(crawl.stat("/foo").num_urls, 0u);  // an error page is not read for links
    EXPECT_EQ(crawl.crawler->todo(), 0u);
    EXPECT_FALSE(crawl.interrupted);
}

TEST(Crawl, FetchesEachPageOfALinkCycleOnce) {
    TestSite site;
    site.add_page("/foo", {"/bar", "/foo"});
    site.add_page("/bar", {"/foo"});
    Crawl crawl(site, {site.url("/foo")});
    crawl.run();
    ASSERT_EQ(crawl.done().size(), 2u);
    EXPECT_EQ(crawl.stat("/foo").num_urls, 2u);
    EXPECT_EQ(crawl.stat("/foo").num_new_urls, 1u);
    EXPECT_EQ(crawl.stat("/bar").num_urls, 1u);
    EXPECT_EQ(crawl.stat("/bar").num_new_urls, 0u);
    EXPECT_EQ(site.requests_for("/foo"), 1u);
    EXPECT_EQ(site.requests_for("/bar"), 1u);
}

TEST(Crawl, CountsALinkOnceWhateverItsFragmentOrSpelling) {
    TestSite site;
    site.add_page("/dir/", {"page#one", "page#two", "./page", "/dir/page", "../dir/page", site.url("/dir/page")});
    site.add_page("/dir/page", {});
    Crawl crawl(site, {site.url("/dir/")});
    crawl.run();
    EXPECT_EQ(crawl.stat("/dir/").num_urls, 1u);
    EXPECT_EQ(site.requests_for("/dir/page"), 1u);
}

TEST(Crawl, ResolvesRelativeLinksAgainstThePageTheyAreOn) {
    TestSite site;
    site.add_page("/a/b/page", {"../up", "./same", "?q=1", "//127.0.0.1:" + std::to_string(site.port()) + "/abs"});
    Crawl crawl(site, {site.url("/a/b/page")});
    crawl.run();
    EXPECT_EQ(site.requests_for("/a/up"), 1u);
    EXPECT_EQ(site.requests_for("/a/b/same"), 1u);
    EXPECT_EQ(site.requests_for("/a/b/page?q=1"), 1u);
    EXPECT_EQ(site.requests_for("/abs"), 1u);
    EXPECT_EQ(site.total_requests(), 5u);
}

TEST(Crawl, NeverFetchesALinkToAnotherHost) {
    TestSite site;
    site.add_page("/", {"http://example.com/", site.url("/", "localhost")});
    Crawl crawl(site, {site.url("/")});
    crawl.run();
    EXPECT_EQ(crawl.stat("/").num_urls, 0u);
    EXPECT_EQ(crawl.done().size(), 1u);
    EXPECT_EQ(site.total_requests(), 1u);
}

TEST(Crawl, IgnoresLinksThatAreNotHttp) {
    TestSite site;
    const std::string port = std::to_string(site.port());
    site.add_page("/", {"mailto:lab@example.com", "javascript:void(0)", "https://127.0.0.1:" + port + "/tls",
                        "ftp://127.0.0.1:" + port + "/file", "data:text/html,hello"});
    Crawl crawl(site, {site.url("/")});
    crawl.run();
    EXPECT_EQ(crawl.stat("/").num_urls, 0u);
    EXPECT_EQ(site.total_requests(), 1u);
}

TEST(Crawl, ReadsLinksOnlyInHtmlPages) {
    TestSite site;
    site.add_page("/", {"/notes.txt", "/data.xml", "/shouty", "/untyped"});
    site.add("/notes.txt", Page{.content_type = "text/plain", .body = R"(<a href="/secret-1">)"});
    site.add("/data.xml", Page{.content_type = "application/xml", .body = R"(<a href="/secret-2"/>)"});
    site.add("/shouty", Page{.content_type = R"(TEXT/HTML; Charset="ISO-8859-1")", .body = R"(<a href="/real">)"});
    site.add("/untyped", Page{.content_type = "", .body = R"(<a href="/secret-3">)"});
    site.add_page("/real", {});
    Crawl crawl(site, {site.url("/")});
    crawl.run();
    EXPECT_EQ(crawl.stat("/notes.txt").content_type, "text/plain");
    EXPECT_EQ(crawl.stat("/notes.txt").num_urls, 0u);
    EXPECT_EQ(crawl.stat("/data.xml").content_type, "application/xml");
    EXPECT_EQ(crawl.stat("/data.xml").num_urls, 0u);
    EXPECT_EQ(crawl.stat("/shouty").content_type, "text/html");
    EXPECT_EQ(crawl.stat("/shouty").encoding, "iso-8859-1");
    EXPECT_EQ(crawl.stat("/shouty").num_urls, 1u);
    EXPECT_EQ(crawl.stat("/untyped").content_type, "");
    EXPECT_EQ(crawl.stat("/untyped").num_urls, 0u);
    EXPECT_EQ(site.requests_for("/real"), 1u);
    for (const char* secret : {"/secret-1", "/secret-2", "/secret-3"}) EXPECT_EQ(site.requests_for(secret), 0u);
}

// Pages link to bytes no URL may hold (Latin-1, broken UTF-8, spaces): they are percent-encoded
// before they are fetched, so every request line is printable ASCII, and the JSON report is valid.
TEST(Crawl, PercentEncodesLinksWithRawBytesAndReportsThemInValidJson) {
    TestSite site;
    site.add_page("/", {"/caf\xE9", "/x\xFF\xFE", "/sp ace?q=a b", "/moved"});
    site.add_redirect("/moved", "/caf\xC3\xA9");
    site.add_page("/caf%E9", {});
    site.add_page("/x%FF%FE", {});
    Crawl crawl(site, {site.url("/")});
    crawl.run();
    for (const std::string& request : site.requests()) {
        const std::string target = request.substr(request.find(' ') + 1);
        EXPECT_TRUE(std::all_of(target.begin(), target.end(), [](char c) { return c > 0x20 && c < 0x7f; }))
            << "not printable ASCII: " << target;
    }
    EXPECT_EQ(site.requests_for("/caf%E9"), 1u);
    EXPECT_EQ(site.requests_for("/x%FF%FE"), 1u);
    EXPECT_EQ(site.requests_for("/sp%20ace?q=a%20b"), 1u);
    EXPECT_EQ(site.requests_for("/caf%C3%A9"), 1u);
    EXPECT_EQ(crawl.stat("/moved").next_url, site.url("/caf%C3%A9"));
    EXPECT_EQ(crawl.done().size(), 6u);

    const Json json = parse_json(format_json(make_report(*crawl.crawler, false)));  // throws if not UTF-8
    EXPECT_EQ(json.at("urls").number, 6);
    EXPECT_EQ(json.at("fetches").items[1].at("url").string, site.url("/caf%C3%A9"));
}

// A site that makes up pages (/deep/1 links /deep/2, and so on) never ends on its own.
TEST(Crawl, QueuesNoMoreThanMaxPagesUrlsAndCountsTheLinksItLeft) {
    TestSite site;
    for (int i = 1; i <= 30; ++i) site.add_page("/deep/" + std::to_string(i), {"/deep/" + std::to_string(i + 1)});
    Crawl crawl(site, {site.url("/deep/1")});
    crawl.options.max_pages = 10;
    crawl.run();
    EXPECT_FALSE(crawl.interrupted);
    EXPECT_EQ(crawl.done().size(), 10u);
    EXPECT_EQ(site.total_requests(), 10u);
    EXPECT_EQ(site.requests_for("/deep/10"), 1u);
    EXPECT_EQ(site.requests_for("/deep/11"), 0u);
    EXPECT_EQ(crawl.stat("/deep/10").num_new_urls, 0u);
    EXPECT_EQ(crawl.stat("/deep/10").num_over_page_limit, 1u);
    EXPECT_EQ(crawl.crawler->over_page_limit(), 1u);
    EXPECT_EQ(crawl.crawler->todo(), 0u);
}

TEST(Crawl, CountsEveryNewLinkAndRedirectThePageLimitLeftUnfollowed) {
    TestSite site;
    std::vector<std::string> links = {"/moved"};
    for (int i = 0; i < 20; ++i) links.push_back("/page/" + std::to_string(i));
    site.add_page("/", links);
    site.add_redirect("/moved", "/target");
    for (int i = 0; i < 20; ++i) site.add_page("/page/" + std::to_string(i), {"/", "/page/0"});
    Crawl crawl(site, {site.url("/")});
    crawl.options.max_pages = 2;  // the root and the first link in order: "/moved"
    crawl.run();
    EXPECT_EQ(crawl.done().size(), 2u);
    EXPECT_EQ(crawl.stat("/").num_urls, 21u);
    EXPECT_EQ(crawl.stat("/").num_new_urls, 1u);
    EXPECT_EQ(crawl.stat("/").num_over_page_limit, 20u);
    EXPECT_EQ(crawl.stat("/moved").redirect, Redirect::page_limit);
    EXPECT_EQ(site.requests_for("/target"), 0u);
    EXPECT_EQ(crawl.crawler->over_page_limit(), 21u);
}

TEST(Crawl, WithoutAPageLimitCountsNothingOverIt) {
    TestSite site;
    site.add_page("/", {"/a"});
    site.add_page("/a", {"/"});
    Crawl crawl(site, {site.url("/")});
    crawl.run();
    EXPECT_EQ(crawl.done().size(), 2u);
    EXPECT_EQ(crawl.crawler->over_page_limit(), 0u);
}

// A page longer than body_cap is read for links only that far, up to its last complete tag (a
// link cut in half names a page that does not exist), and says it was cut.
TEST(Crawl, ReadsAPageCutAtTheBodyCapUpToItsLastCompleteTagAndSaysSo) {
    TestSite site;
    const std::string early = R"(<a href="/early">early</a>)";
    const std::string cut_link = "<a href=/partial-link-cut-by-the-cap>";
    std::string body = early + std::string(100 - early.size() - 10, ' ') + cut_link;  // the cap falls in it
    body += std::string(300, ' ') + R"(<a href="/late">late</a>)";
    site.add("/", Page{.body = body});
    site.add_page("/early", {});
    site.add_page("/small", {});
    Crawl crawl(site, {site.url("/"), site.url("/small")});
    crawl.options.body_cap = 100;
    crawl.run();
    EXPECT_EQ(site.requests_for("/early"), 1u);
    EXPECT_EQ(site.requests_for("/late"), 0u);
    EXPECT_EQ(site.total_requests(), 3u) << "a link cut in half was followed";
    EXPECT_TRUE(crawl.stat("/").cut_at_body_cap);
    EXPECT_EQ(crawl.stat("/").size, body.size());
    EXPECT_FALSE(crawl.stat("/small").cut_at_body_cap);
}

TEST(Crawl, RecordsTheSizeOfEachBody) {
    TestSite site;
    site.add("/", Page{.content_type = "text/plain", .body = std::string(12345, 'x')});
    Crawl crawl(site, {site.url("/")});
    crawl.run();
    EXPECT_EQ(crawl.stat("/").size, 12345u);
}

TEST(Crawl, NeverFetchesAnExcludedUrl) {
    TestSite site;
    site.add_page("/", {"/keep", "/skip-me", "/keep/skip"});
    site.add_page("/keep", {"/skip-too"});
    Crawl crawl(site, {site.url("/")});
    crawl.options.exclude = {"*skip*"};
    crawl.run();
    EXPECT_EQ(crawl.stat("/").num_urls, 1u);
    EXPECT_EQ(site.requests_for("/keep"), 1u);
    EXPECT_EQ(site.total_requests(), 2u);
}

TEST(Crawl, FollowsLinksToEveryRootsHost) {
    TestSite site;  // a.test, b.test and c.test all point at it, like --resolve
    site.add_page("/a", {site.url("/from-a", "b.test"), site.url("/c", "c.test")});
    site.add_page("/b", {});
    site.add_page("/from-a", {});
    Crawl crawl(site, {site.url("/a", "a.test"), site.url("/b", "b.test")});
    crawl.resolve("c.test");
    crawl.run();
    const std::string port = std::to_string(site.port());
    std::vector<std::string> requests = site.requests();
    std::sort(requests.begin(), requests.end());
    EXPECT_EQ(requests, (std::vector<std::string>{"a.test:" + port + " /a", "b.test:" + port + " /b",
                                                  "b.test:" + port + " /from-a"}));
    EXPECT_EQ(crawl.stat(site.url("/a", "a.test")).num_urls, 1u);
}

TEST(Crawl, StrictFetchesNeitherWwwNorSubdomains) {
    TestSite site;
    site.add_page("/", {site.url("/www", "www.example.test"), site.url("/docs", "docs.example.test")});
    Crawl crawl(site, {site.url("/", "example.test")});
    crawl.resolve("www.example.test");
    crawl.resolve("docs.example.test");
    crawl.run();
    EXPECT_EQ(crawl.done().size(), 1u);
    EXPECT_EQ(site.total_requests(), 1u);
}

TEST(Crawl, LenientFetchesWwwAndSubdomainsAndSaysWhichWereNotResolved) {
    TestSite site;
    site.add_page("/", {site.url("/www", "www.example.test"), site.url("/docs", "docs.example.test"),
                        site.url("/deep", "deep.docs.example.test"), site.url("/other", "other.test")});
    Crawl crawl(site, {site.url("/", "example.test")});
    crawl.options.strict = false;
    crawl.resolve("www.example.test");
    crawl.resolve("docs.example.test");
    crawl.resolve("other.test");
    crawl.run();
    const std::string port = std::to_string(site.port());
    std::vector<std::string> requests = site.requests();
    std::sort(requests.begin(), requests.end());
    EXPECT_EQ(requests, (std::vector<std::string>{"docs.example.test:" + port + " /docs", "example.test:" + port + " /",
                                                  "www.example.test:" + port + " /www"}));
    // In scope, but no address: recorded as a failure that says why, and never connected to.
    const FetchStatistic deep = crawl.stat(site.url("/deep", "deep.docs.example.test"));
    EXPECT_TRUE(deep.failed());
    EXPECT_EQ(deep.error_kind, ErrorKind::resolve);
    EXPECT_NE(deep.error.find("not resolved before the crawl"), std::string::npos) << deep.error;
    EXPECT_EQ(deep.tries, 0u);
    EXPECT_FALSE(crawl.fetched(site.url("/other", "other.test")));
}

TEST(Crawl, QueuesEachRedirectTargetAsANewUrl) {
    TestSite site;
    site.add_redirect("/", site.url("/foo"));
    site.add_redirect("/foo", "/bar", 301);  // a relative Location, resolved against /foo
    Crawl crawl(site, {site.url("/")});
    crawl.run();
    ASSERT_EQ(crawl.done().size(), 3u);
    EXPECT_EQ(crawl.done()[0].status, 302);
    EXPECT_EQ(crawl.done()[0].next_url, site.url("/foo"));
    EXPECT_EQ(crawl.done()[0].redirect, Redirect::queued);
    EXPECT_EQ(crawl.done()[1].status, 301);
    EXPECT_EQ(crawl.done()[1].next_url, site.url("/bar"));
    EXPECT_EQ(crawl.done()[2].url, site.url("/bar"));
    EXPECT_EQ(crawl.done()[2].status, 404);
}

TEST(Crawl, StopsFollowingRedirectsAtMaxRedirect) {
    TestSite site;
    site.add_redirect("/", "/foo");
    site.add_redirect("/foo", "/bar");
    Crawl crawl(site, {site.url("/")});
    crawl.options.max_redirect = 1;
    crawl.run();
    ASSERT_EQ(crawl.done().size(), 2u);
    EXPECT_EQ(crawl.stat("/").redirect, Redirect::queued);
    EXPECT_EQ(crawl.stat("/foo").redirect, Redirect::limit_reached);
    EXPECT_EQ(crawl.stat("/foo").next_url, site.url("/bar"));
    EXPECT_EQ(site.requests_for("/bar"), 0u);
}

TEST(Crawl, FetchesEachUrlOfARedirectCycleOnce) {
    TestSite site;
    site.add_redirect("/bar", "/foo");
    site.add_redirect("/foo", "/bar");
    Crawl crawl(site, {site.url("/bar")});
    crawl.run();
    ASSERT_EQ(crawl.done().size(), 2u);
    EXPECT_EQ(crawl.stat("/bar").redirect, Redirect::queued);
    EXPECT_EQ(crawl.stat("/foo").redirect, Redirect::already_seen);
    EXPECT_EQ(crawl.stat("/foo").next_url, site.url("/bar"));
    EXPECT_EQ(site.total_requests(), 2u);
}

TEST(Crawl, FetchesTheTargetOfTwoRedirectsOnce) {
    TestSite site;  // foo -> baz, bar -> baz, baz -> quux
    site.add_redirect("/foo", "/baz");
    site.add_redirect("/bar", "/baz");
    site.add_redirect("/baz", "/quux");
    Crawl crawl(site, {site.url("/foo"), site.url("/bar")});
    crawl.run();
    ASSERT_EQ(crawl.done().size(), 4u);
    EXPECT_EQ(crawl.stat("/foo").next_url, site.url("/baz"));
    EXPECT_EQ(crawl.stat("/bar").next_url, site.url("/baz"));
    // Whichever of the two finished first queued /baz; the other found it seen.
    std::vector<Redirect> outcomes = {crawl.stat("/foo").redirect, crawl.stat("/bar").redirect};
    std::sort(outcomes.begin(), outcomes.end());
    EXPECT_EQ(outcomes, (std::vector<Redirect>{Redirect::queued, Redirect::already_seen}));
    EXPECT_EQ(crawl.stat("/baz").next_url, site.url("/quux"));
    EXPECT_EQ(crawl.stat("/quux").status, 404);
    EXPECT_EQ(site.requests_for("/baz"), 1u);
    EXPECT_EQ(site.requests_for("/quux"), 1u);
}

TEST(Crawl, DoesNotFollowARedirectToAnotherHost) {
    TestSite site;
    site.add_redirect("/offsite", "http://elsewhere.test/site/");
    Crawl crawl(site, {site.url("/offsite")});
    crawl.run();
    ASSERT_EQ(crawl.done().size(), 1u);
    EXPECT_EQ(crawl.stat("/offsite").redirect, Redirect::out_of_scope);
    EXPECT_EQ(crawl.stat("/offsite").next_url, "http://elsewhere.test/site/");
}

// 500 Lines' test_max_tasks: the server counts how many requests it is answering at once.
void expect_at_most_in_flight(std::size_t max_tasks, std::size_t links, std::size_t expected) {
    TestSite site;
    std::vector<std::string> paths;
    for (std::size_t i = 0; i < links; ++i) {
        paths.push_back("/" + std::to_string(i));
        site.add(paths.back(), Page{.body = "slow", .delay = 300ms});
    }
    site.add_page("/", paths);
    Crawl crawl(site, {site.url("/")});
    crawl.options.max_tasks = max_tasks;
    crawl.run();
    EXPECT_EQ(crawl.done().size(), links + 1);
    EXPECT_EQ(site.most_in_flight(), expected) << "max_tasks " << max_tasks;
    EXPECT_EQ(crawl.crawler->most_in_flight(), expected);
}

TEST(Crawl, NeverHasMoreThanMaxTasksRequestsInFlight) {
    expect_at_most_in_flight(1, 4, 1);
    expect_at_most_in_flight(2, 5, 2);
}

TEST(Crawl, RunsAsManyFetchesAtOnceAsThereAreUrlsUpToMaxTasks) {
    expect_at_most_in_flight(10, 4, 4);
}

// 500 Lines' test_max_tries: a server that drops the first connections for a page.
TEST(Crawl, RetriesAConnectionThatBreaksUntilItSucceeds) {
    TestSite site;
    site.add("/", Page{.body = "finally", .drop_first = 2});
    Crawl crawl(site, {site.url("/")});
    crawl.options.max_tries = 4;
    crawl.run();
    EXPECT_EQ(crawl.stat("/").status, 200);
    EXPECT_EQ(crawl.stat("/").tries, 3u);
    EXPECT_EQ(site.requests_for("/"), 3u);
}

TEST(Crawl, GivesUpAfterMaxTriesAndRecordsTheError) {
    TestSite site;
    site.add("/", Page{.body = "never seen", .drop_first = 2});
    Crawl crawl(site, {site.url("/")});
    crawl.options.max_tries = 2;
    crawl.run();
    const FetchStatistic root = crawl.stat("/");
    EXPECT_TRUE(root.failed());
    EXPECT_EQ(root.status, 0);
    EXPECT_EQ(root.tries, 2u);
    EXPECT_EQ(root.error_kind, ErrorKind::receive);
    EXPECT_FALSE(root.error.empty());
    EXPECT_EQ(site.requests_for("/"), 2u);
}

TEST(Crawl, RetriesARefusedConnection) {
    // A port nobody listens on: bound to get a free number, then closed again.
    int port = 0;
    {
        TestSite gone;
        port = gone.port();
    }
    TestSite site;  // only for the Crawl helper's address; its own port is not used
    Crawl crawl(site, {});
    const Url root = parse_url("http://127.0.0.1:" + std::to_string(port) + "/");
    crawl.options.roots = {root};
    Address address = site.address();
    reinterpret_cast<sockaddr_in*>(&address.storage)->sin_port = htons(static_cast<std::uint16_t>(port));
    crawl.options.addresses[host_key(root)] = {address};
    crawl.options.max_tries = 3;
    crawl.run();
    const FetchStatistic stat = crawl.stat(root.to_string());
    EXPECT_EQ(stat.tries, 3u);
    EXPECT_EQ(stat.error_kind, ErrorKind::connect);
    EXPECT_EQ(stat.error, "connect: Connection refused");
}

TEST(Crawl, DoesNotRetryAnHttpErrorStatus) {
    TestSite site;
    site.add("/", Page{.status = 500, .body = "broken"});
    Crawl crawl(site, {site.url("/")});
    crawl.run();
    EXPECT_EQ(crawl.stat("/").status, 500);
    EXPECT_EQ(crawl.stat("/").tries, 1u);
    EXPECT_EQ(site.requests_for("/"), 1u);
}

TEST(Crawl, RecordsATimeoutWithoutRetryingIt) {
    TestSite site;
    site.add_page("/", {"/slow"});
    site.add("/slow", Page{.body = "too late", .delay = 5000ms});
    Crawl crawl(site, {site.url("/")});
    crawl.options.timeout = 200ms;
    crawl.run();
    const FetchStatistic slow = crawl.stat("/slow");
    EXPECT_EQ(slow.error_kind, ErrorKind::timeout);
    EXPECT_EQ(slow.tries, 1u);
    EXPECT_EQ(site.requests_for("/slow"), 1u);
}

TEST(Crawl, CancelledStopsEveryWorkerAndKeepsWhatWasDone) {
    TestSite site;
    site.add_page("/", {"/slow-1", "/slow-2", "/slow-3"});
    for (const char* path : {"/slow-1", "/slow-2", "/slow-3"}) site.add(path, Page{.body = "slow", .delay = 5000ms});
    Crawl crawl(site, {site.url("/")});
    crawl.options.max_tasks = 2;
    crawl.run(500ms);  // the root is done long before; the slow pages are not
    EXPECT_TRUE(crawl.interrupted);
    ASSERT_EQ(crawl.done().size(), 1u);
    EXPECT_EQ(crawl.done()[0].url, site.url("/"));
    EXPECT_EQ(crawl.crawler->todo(), 3u);  // two were being fetched, one was still queued
    // run() checked the rest: no timer, no socket left; every worker finished.
}

// Ctrl-C may come at any moment: before the first fetch, while pages time out and are recorded,
// in the very turn a fetch's deadline fires. Whenever it comes, the crawl stops, every worker
// finishes, and nothing is left behind (run() checks that, and fails after 20 s if it hangs).
TEST(Crawl, StopsWheneverItIsCancelledEvenAsFetchDeadlinesFire) {
    int interrupted = 0;
    for (int k = 0; k <= 12; ++k) {
        SCOPED_TRACE("cancelled after " + std::to_string(5 * k) + " ms");
        TestSite site;  // a new one each time: the last one's slow answers would hold up the root
        std::vector<std::string> links;
        for (int i = 0; i < 120; ++i) links.push_back("/slow-" + std::to_string(i));
        site.add_page("/", links);
        for (const std::string& path : links) site.add(path, Page{.body = "slow", .delay = 5000ms});
        Crawl crawl(site, {site.url("/")});
        crawl.options.max_tasks = 8;
        crawl.options.max_tries = 1;
        crawl.options.timeout = 20ms;  // deadlines fire all through the crawl (about 300 ms)
        crawl.run(std::chrono::milliseconds(5 * k) + 1ns);  // run() fails if the crawl hangs
        interrupted += crawl.interrupted ? 1 : 0;
    }
    // A machine too busy to fetch the root within 20 ms ends that crawl early, uninterrupted.
    EXPECT_GE(interrupted, 10);
}

}  // namespace
}  // namespace sixways::crawler
