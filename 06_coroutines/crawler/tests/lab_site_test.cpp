// A crawl of the lab server's synthetic site (lab/site.cpp), in-process on a free port: the crawler
// must find exactly the URLs lab/README.md lists, and fetch each of them exactly once (counted by
// the server). The list is written out here again, on purpose: it is what the crawler is checked
// against, so it must not be computed by code that could share the crawler's mistakes.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "06_coroutines/crawler/crawler.hpp"
#include "06_coroutines/task.hpp"
#include "lab/labserver.hpp"

namespace sixways::crawler {
namespace {

using namespace std::chrono_literals;

// lab/README.md, "The synthetic site": the 32 URLs and their statuses.
const std::map<std::string, int> expected_site = {
    {"/site/", 200},               {"/site/about", 200},        {"/site/contact", 200},
    {"/site/blog/", 200},          {"/site/blog/?page=2", 200}, {"/site/blog/post-1", 200},
    {"/site/blog/post-2", 200},    {"/site/blog/post-3", 200},  {"/site/docs/", 200},
    {"/site/docs/intro", 200},     {"/site/docs/chapter-1", 200}, {"/site/docs/chapter-2", 200},
    {"/site/docs/chapter-3", 200}, {"/site/docs/appendix", 200}, {"/site/files/", 200},
    {"/site/home", 200},           {"/site/shared", 200},       {"/site/slow/1", 200},
    {"/site/slow/2", 200},         {"/site/slow/3", 200},
    {"/site/files/notes.txt", 200}, {"/site/files/data.json", 200},
    {"/site/old-home", 301},       {"/site/older-home", 302},   {"/site/alias-1", 301},
    {"/site/alias-2", 302},        {"/site/loop-a", 302},       {"/site/loop-b", 302},
    {"/site/moved-chapter", 301},  {"/site/offsite", 302},
    {"/site/missing", 404},        {"/site/blog/post-9", 404},
};

class LabSite : public ::testing::TestWithParam<std::size_t> {};

TEST_P(LabSite, CrawlFindsExactlyTheDocumentedUrlsAndFetchesEachOnce) {
    lab::LabServerOptions server_options;
    server_options.hosts = {"127.0.0.1"};
    server_options.port = 0;
    lab::LabServer server(server_options);
    server.start();

    CrawlerOptions options;
    options.roots = {parse_url(server.url("/site/"))};
    options.addresses[host_key(options.roots[0])] = resolve(options.roots[0]);
    options.max_tasks = GetParam();
    options.timeout = 5s;
    coroutines::EventLoop loop;
    Crawler crawler(loop, options);
    coroutines::Task<void> crawling = loop.create_task(crawler.crawl());
    {
        auto on_watchdog = [crawling]() mutable { crawling.cancel(); };
        coroutines::TimerGuard watchdog(loop.call_later(30s, on_watchdog));
        ASSERT_NO_THROW(loop.run_until_complete(crawling)) << "the crawl did not finish within 30 s";
    }

    std::map<std::string, int> found;
    const std::string prefix = server.url("");
    for (const FetchStatistic& stat : crawler.done()) {
        ASSERT_TRUE(stat.url.starts_with(prefix)) << stat.url;
        EXPECT_TRUE(found.emplace(stat.url.substr(prefix.size()), stat.status).second) << "twice: " << stat.url;
        EXPECT_FALSE(stat.failed()) << stat.url << ": " << stat.error;
    }
    EXPECT_EQ(found, expected_site);

    // The server's own count: each of the 32 asked for exactly once, and nothing else.
    const lab::LabStats stats = server.stats();
    EXPECT_EQ(stats.requests, expected_site.size());
    for (const auto& [path, status] : expected_site) {
        const auto asked = stats.requests_by_path.find(path);
        EXPECT_TRUE(asked != stats.requests_by_path.end() && asked->second == 1) << path;
    }
    EXPECT_LE(crawler.most_in_flight(), GetParam());
    EXPECT_EQ(crawler.todo(), 0u);
    EXPECT_EQ(loop.watched_descriptors(), 0u);

    // A few of the traps, by name.
    const auto stat_of = [&](const std::string& path) {
        for (const FetchStatistic& stat : crawler.done()) {
            if (stat.url == prefix + path) return stat;
        }
        return FetchStatistic{};
    };
    EXPECT_EQ(stat_of("/site/offsite").redirect, Redirect::out_of_scope);
    EXPECT_EQ(stat_of("/site/moved-chapter").next_url, prefix + "/site/docs/chapter-3");
    EXPECT_EQ(stat_of("/site/files/notes.txt").num_urls, 0u);
    EXPECT_EQ(stat_of("/site/files/data.json").content_type, "application/json");
}

INSTANTIATE_TEST_SUITE_P(MaxTasks, LabSite, ::testing::Values(1, 10, 50),
                         [](const ::testing::TestParamInfo<std::size_t>& info) {
                             return "max_tasks_" + std::to_string(info.param);
                         });

}  // namespace
}  // namespace sixways::crawler
