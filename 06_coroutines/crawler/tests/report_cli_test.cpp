// The command line, the report, and the crawl binary run as a user runs it.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "06_coroutines/crawler/cli.hpp"
#include "06_coroutines/crawler/report.hpp"
#include "06_coroutines/crawler/tests/test_site.hpp"
#include "common/json_reader.hpp"
#include "lab/labserver.hpp"

namespace sixways::crawler {
namespace {

using namespace std::chrono_literals;

// ---- The command line ----

TEST(CrawlCli, WithoutArgumentsCrawlsTheLabSiteWithThe500LinesDefaults) {
    const CrawlCli cli = parse_crawl_cli({});
    ASSERT_EQ(cli.roots.size(), 1u);
    EXPECT_EQ(cli.roots[0].to_string(), "http://127.0.0.1:8080/site/");
    EXPECT_EQ(cli.max_tasks, 10u);
    EXPECT_EQ(cli.max_redirect, 10u);
    EXPECT_EQ(cli.max_tries, 4u);
    EXPECT_TRUE(cli.strict);
    EXPECT_EQ(cli.timeout, std::chrono::seconds(10));
    EXPECT_EQ(cli.max_pages, 0u);  // no limit
    EXPECT_FALSE(cli.json);
}

TEST(CrawlCli, ReadsEveryOptionInBothSpellings) {
    const CrawlCli cli = parse_crawl_cli({"http://a.test/", "--max-tasks", "3", "--max-redirect=0", "--max-tries", "1",
                                          "--exclude", "*.pdf", "--lenient", "--timeout=250ms", "--resolve",
                                          "a.test:80:127.0.0.1", "http://b.test:81/x", "--json", "--max-pages=500",
                                          "--exclude=http://a.test/private/*"});
    ASSERT_EQ(cli.roots.size(), 2u);
    EXPECT_EQ(cli.roots[1].to_string(), "http://b.test:81/x");
    EXPECT_EQ(cli.max_tasks, 3u);
    EXPECT_EQ(cli.max_redirect, 0u);
    EXPECT_EQ(cli.max_tries, 1u);
    EXPECT_EQ(cli.exclude, (std::vector<std::string>{"*.pdf", "http://a.test/private/*"}));
    EXPECT_FALSE(cli.strict);
    EXPECT_EQ(cli.timeout, std::chrono::milliseconds(250));
    ASSERT_EQ(cli.resolved.count("a.test:80"), 1u);
    EXPECT_TRUE(cli.json);
    EXPECT_EQ(cli.max_pages, 500u);
}

TEST(CrawlCli, RejectsBadUsageWithAMessage) {
    const std::vector<std::vector<std::string>> bad = {
        {"--max-tasks", "0"},          {"--max-tasks", "many"},    {"--max-tasks=-1"},
        {"--max-tasks"},               {"--max-tries", "0"},       {"--max-redirect", "-1"},
        {"--exclude", "("},            {"--exclude", "\\.pdf$"},  {"--exclude", "skip"},
        {"--exclude", ""},             {"--timeout", "0"},         {"--timeout", "soon"},
        {"--resolve", "a.test"},       {"--resolve", "a.test:80"}, {"--resolve", "a.test:80:not-an-ip"},
        {"--resolve", "a.test:x:127.0.0.1"}, {"--resolve", "a.test:80:::1"},
        {"--strict", "--lenient"},     {"--json=yes"},             {"--bogus"},
        {"--max-pages", "0"},          {"--max-pages", "lots"},    {"--max-pages"},
        {"https://example.com/"},      {"example.com"},            {"http://a b/"},
    };
    for (const std::vector<std::string>& args : bad) {
        std::string joined;
        for (const std::string& arg : args) joined += arg + " ";
        EXPECT_THROW(parse_crawl_cli(args), UsageError) << joined;
    }
}

TEST(CrawlCli, ResolveTakesIpv4AndBracketedIpv6AddressesForOneHostAndPort) {
    const auto [key, addresses] = parse_resolve("A.Test:8080:127.0.0.1,[::1]");
    EXPECT_EQ(key, "a.test:8080");
    ASSERT_EQ(addresses.size(), 2u);
    EXPECT_EQ(addresses[0].to_string(), "127.0.0.1:8080");
    EXPECT_EQ(addresses[1].to_string(), "[::1]:8080");
}

TEST(CrawlCli, CapsWorkersAtTheDescriptorsLeftAfterThoseInUseAndAReserve) {
    EXPECT_EQ(workers_within_descriptor_limit(10, 1024, 3), 10u);
    EXPECT_EQ(workers_within_descriptor_limit(1000, 64, 3), 64u - 3 - descriptor_reserve);
    EXPECT_EQ(workers_within_descriptor_limit(1000, 64, 20), 64u - 20 - descriptor_reserve);
    EXPECT_EQ(workers_within_descriptor_limit(1000, 64, -1), 64u - 3 - descriptor_reserve);  // unknown: 3
    EXPECT_EQ(workers_within_descriptor_limit(1000, 3 + descriptor_reserve + 1, 3), 1u);
    EXPECT_EQ(workers_within_descriptor_limit(1000, 3 + descriptor_reserve, 3), 0u);
    EXPECT_EQ(workers_within_descriptor_limit(1000, 8, 30), 0u);
}

// ---- The report ----

CrawlReport sample_report() {
    CrawlReport report;
    report.roots = {"http://h/"};
    FetchStatistic page;
    page.url = "http://h/";
    page.status = 200;
    page.tries = 1;
    page.size = 611;
    page.content_type = "text/html";
    page.encoding = "utf-8";
    page.num_urls = 2;
    page.num_new_urls = 2;
    FetchStatistic redirect;
    redirect.url = "http://h/old";
    redirect.status = 301;
    redirect.tries = 1;
    redirect.next_url = "http://h/";
    redirect.redirect = Redirect::already_seen;
    FetchStatistic failed;
    failed.url = "http://h/\"quoted\"";
    failed.tries = 4;
    failed.error_kind = ErrorKind::connect;
    failed.error = "connect: Connection refused";
    report.fetches = {page, failed, redirect};  // sorted by URL, as make_report leaves them
    report.wall_s = 0.5;
    report.max_tasks = 10;
    report.most_in_flight = 2;
    return report;
}

TEST(CrawlReport, ShowsOneLinePerUrlThenTheTotals) {
    const std::string text = format_text(sample_report());
    EXPECT_EQ(text,
              "http://h/          200  text/html utf-8  611 bytes, 2 links, 2 new\n"
              "http://h/\"quoted\"  -    error: connect: Connection refused (4 tries)\n"
              "http://h/old       301  -> http://h/ (already seen)\n"
              "Finished 3 URLs in 0.500 s (6.0 URLs/s) with max_tasks 10; at most 2 fetches in flight\n"
              "Statuses: 200 x 1, 301 x 1\n"
              "Failed: 1 (connect 1)\n");
}

TEST(CrawlReport, SaysWhenTheCrawlWasInterrupted) {
    CrawlReport report = sample_report();
    report.interrupted = true;
    report.todo = 7;
    const std::string text = format_text(report);
    EXPECT_NE(text.find("Interrupted after 3 URLs"), std::string::npos) << text;
    EXPECT_NE(text.find("Not finished: 7 URLs"), std::string::npos) << text;
    report.todo = 1;
    EXPECT_NE(format_text(report).find("Not finished: 1 URL queued"), std::string::npos);
}

TEST(CrawlReport, SaysWhenThePageLimitStoppedTheCrawlAndWhichPagesWereCut) {
    CrawlReport report = sample_report();
    report.max_pages = 3;
    report.over_page_limit = 5;
    report.body_cap = 4096;
    report.fetches[0].num_over_page_limit = 5;
    report.fetches[0].cut_at_body_cap = true;
    const std::string text = format_text(report);
    EXPECT_NE(text.find("http://h/          200  text/html utf-8  611 bytes, 2 links, 2 new, 5 over the page "
                        "limit; cut at the body cap, later links not read\n"),
              std::string::npos)
        << text;
    EXPECT_TRUE(text.ends_with("Failed: 1 (connect 1)\n"
                               "Stopped by the page limit (--max-pages 3): 5 links to new URLs not followed\n"
                               "Cut at the body cap (4096 bytes): 1 page, its later links not read\n"))
        << text;

    const Json json = parse_json(format_json(report));
    EXPECT_EQ(json.at("max_pages").number, 3);
    EXPECT_EQ(json.at("over_page_limit").number, 5);
    EXPECT_EQ(json.at("body_cap").number, 4096);
    EXPECT_EQ(json.at("cut_at_body_cap").number, 1);
    EXPECT_EQ(json.at("fetches").items[0].at("num_over_page_limit").number, 5);
    EXPECT_TRUE(json.at("fetches").items[0].at("cut_at_body_cap").boolean);
    EXPECT_FALSE(json.at("fetches").items[1].at("cut_at_body_cap").boolean);
}

TEST(CrawlReport, SaysNothingOfLimitsThatStoppedNothing) {
    const std::string text = format_text(sample_report());
    EXPECT_EQ(text.find("page limit"), std::string::npos) << text;
    EXPECT_EQ(text.find("body cap"), std::string::npos) << text;
    EXPECT_EQ(parse_json(format_json(sample_report())).at("max_pages").type, Json::Type::null);
}

TEST(CrawlReport, JsonIsOneObjectWithTheSameFacts) {
    const Json json = parse_json(format_json(sample_report()));
    EXPECT_EQ(json.at("urls").number, 3);
    EXPECT_EQ(json.at("failed").number, 1);
    EXPECT_EQ(json.at("statuses").at("301").number, 1);
    EXPECT_EQ(json.at("errors").at("connect").number, 1);
    EXPECT_FALSE(json.at("interrupted").boolean);
    const Json& fetches = json.at("fetches");
    ASSERT_EQ(fetches.items.size(), 3u);
    EXPECT_EQ(fetches.items[0].at("num_new_urls").number, 2);
    EXPECT_EQ(fetches.items[1].at("url").string, "http://h/\"quoted\"");
    EXPECT_EQ(fetches.items[1].at("status").type, Json::Type::null);
    EXPECT_EQ(fetches.items[1].at("error_kind").string, "connect");
    EXPECT_EQ(fetches.items[2].at("redirect").string, "already seen");
}

TEST(CrawlReport, JsonIsValidUtf8WhateverBytesTheServerSent) {
    CrawlReport report = sample_report();
    report.fetches[0].content_type = "text/html\xFF";
    report.fetches[0].encoding = "latin-\xE9";
    report.fetches[1].error = "protocol error: \xC0\xAF\x01";
    const Json json = parse_json(format_json(report));  // throws on bytes that are not UTF-8
    EXPECT_EQ(json.at("fetches").items[0].at("content_type").string, "text/html\xEF\xBF\xBD");
    EXPECT_EQ(json.at("fetches").items[1].at("error").string, "protocol error: \xEF\xBF\xBD\xEF\xBF\xBD\\u0001");
}

// ---- The binary ----

struct BinaryRun {
    int exit_status = -1;
    std::string out;
    std::string err;
};

// Runs the crawl binary with `args`, stdout and stderr to pipes. If `interrupt_when` is given, it
// is polled every 10 ms, and SIGINT is sent to the crawl once it returns true. An `open_files` of
// more than 0 sets both descriptor limits of the crawl to it, as `prlimit --nofile=N` would.
BinaryRun run_crawl_binary(const std::vector<std::string>& args, const std::function<bool()>& interrupt_when = {},
                           rlim_t open_files = 0) {
    int out[2];
    int err[2];
    if (pipe2(out, O_CLOEXEC) != 0) return {};
    if (pipe2(err, O_CLOEXEC) != 0) {
        close(out[0]);
        close(out[1]);
        return {};
    }
    std::vector<std::string> argv_strings = {CRAWL_BINARY};
    argv_strings.insert(argv_strings.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& arg : argv_strings) argv.push_back(arg.data());
    argv.push_back(nullptr);
    const pid_t pid = fork();
    if (pid == 0) {
        // The child of a process with threads: only async-signal-safe calls until execv.
        dup2(out[1], STDOUT_FILENO);
        dup2(err[1], STDERR_FILENO);
        // SIGINT back to its default action: a test run started in the background by a script
        // inherits SIGINT ignored, and the Ctrl-C test would then test nothing.
        signal(SIGINT, SIG_DFL);
        if (open_files > 0) {
            const rlimit limit{open_files, open_files};
            if (setrlimit(RLIMIT_NOFILE, &limit) != 0) _exit(127);
        }
        execv(CRAWL_BINARY, argv.data());
        _exit(127);
    }
    close(out[1]);
    close(err[1]);
    BinaryRun run;
    if (pid < 0) {
        close(out[0]);
        close(err[0]);
        return run;
    }
    if (interrupt_when) {
        for (int i = 0; i < 1000 && !interrupt_when(); ++i) std::this_thread::sleep_for(10ms);
        kill(pid, SIGINT);
    }
    // stdout to its end, then stderr: the crawl writes only a few lines there, far less than a
    // pipe holds, so it never waits for us to read them.
    char buffer[4096];
    ssize_t n = 0;
    while ((n = read(out[0], buffer, sizeof buffer)) > 0) run.out.append(buffer, static_cast<std::size_t>(n));
    while ((n = read(err[0], buffer, sizeof buffer)) > 0) run.err.append(buffer, static_cast<std::size_t>(n));
    close(out[0]);
    close(err[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    run.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return run;
}

lab::LabServerOptions lab_options() {
    lab::LabServerOptions options;
    options.hosts = {"127.0.0.1"};
    options.port = 0;
    return options;
}

TEST(CrawlBinary, PrintsOneJsonObjectForTheLabSiteAndExitsZero) {
    lab::LabServer server(lab_options());
    server.start();
    const BinaryRun run = run_crawl_binary({server.url("/site/"), "--json"});
    EXPECT_EQ(run.exit_status, 0);
    const Json json = parse_json(run.out);
    EXPECT_EQ(json.at("urls").number, 32);
    EXPECT_EQ(json.at("failed").number, 0);
    EXPECT_EQ(json.at("todo").number, 0);
}

// A crawl where pages failed must not pass for a clean one in a script.
TEST(CrawlBinary, ExitsOneWhenPagesFailedAndSaysHowManyOnStderr) {
    lab::LabServer server(lab_options());
    server.start();
    const BinaryRun run = run_crawl_binary({server.url("/fault/close"), "--max-tries", "2"});
    EXPECT_EQ(run.exit_status, 1);
    EXPECT_NE(run.out.find("Failed: 1 (receive 1)"), std::string::npos) << run.out;
    EXPECT_NE(run.err.find("crawl: 1 of 1 URLs failed"), std::string::npos) << run.err;
}

TEST(CrawlBinary, ExitsZeroWhenEveryUrlGotAResponseEvenA404) {
    lab::LabServer server(lab_options());
    server.start();
    const BinaryRun run = run_crawl_binary({server.url("/site/missing")});
    EXPECT_EQ(run.exit_status, 0) << run.err;
    EXPECT_NE(run.out.find("Statuses: 404 x 1\nFailed: 0\n"), std::string::npos) << run.out;
    EXPECT_EQ(run.err, "");
}

// 1000 workers under a limit of 64 descriptors: without the cap, most fetches failed with "Too
// many open files". The workers are capped, once, with a message, and every page is fetched.
TEST(CrawlBinary, CapsItsWorkersAtTheDescriptorLimitAndFetchesEveryPage) {
    testing::TestSite site;
    std::vector<std::string> links;
    for (int i = 0; i < 200; ++i) {
        links.push_back("/page/" + std::to_string(i));
        site.add_page(links.back(), {});
    }
    site.add_page("/", links);
    const BinaryRun run = run_crawl_binary({site.url("/"), "--max-tasks", "1000", "--json"}, {}, 64);
    EXPECT_EQ(run.exit_status, 0) << run.err;
    const Json json = parse_json(run.out);
    EXPECT_EQ(json.at("urls").number, 201);
    EXPECT_EQ(json.at("failed").number, 0);
    EXPECT_LT(json.at("max_tasks").number, 64);
    EXPECT_LT(site.most_in_flight(), 64u);
    EXPECT_EQ(site.total_requests(), 201u);
    EXPECT_NE(run.err.find("crawl: --max-tasks 1000 is more than the descriptor limit allows (64, "),
              std::string::npos)
        << run.err;
}

TEST(CrawlBinary, ExitsOneWhenTheDescriptorLimitLeavesNoRoomForAConnection) {
    const BinaryRun run = run_crawl_binary({"http://127.0.0.1:1/"}, {}, 8);
    EXPECT_EQ(run.exit_status, 1);
    EXPECT_NE(run.err.find("leaves no descriptor for a connection"), std::string::npos) << run.err;
    EXPECT_EQ(run.out, "");
}

// A site without end (/deep/1 links /deep/2 ...) stops at --max-pages, and says why.
TEST(CrawlBinary, StopsAnEndlessSiteAtMaxPagesAndSaysSo) {
    testing::TestSite site;
    for (int i = 1; i <= 50; ++i) site.add_page("/deep/" + std::to_string(i), {"/deep/" + std::to_string(i + 1)});
    const BinaryRun text = run_crawl_binary({site.url("/deep/1"), "--max-pages", "5"});
    EXPECT_EQ(text.exit_status, 0) << text.err;
    EXPECT_NE(text.out.find("Finished 5 URLs"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("Stopped by the page limit (--max-pages 5): 1 link to new URLs not followed\n"),
              std::string::npos)
        << text.out;
    const BinaryRun json = run_crawl_binary({site.url("/deep/1"), "--max-pages=7", "--json"});
    EXPECT_EQ(json.exit_status, 0) << json.err;
    EXPECT_EQ(parse_json(json.out).at("urls").number, 7);
    EXPECT_EQ(parse_json(json.out).at("over_page_limit").number, 1);
    EXPECT_EQ(site.total_requests(), 12u);
}

// An exclude pattern is matched against every link found, up to the longest one followed
// (Crawler::max_url_length). When --exclude took a std::regex, ([a-z]|[0-9]|-|_|\.)*\.(zip|pdf)$
// ran out of stack on this link (SIGSEGV, even at -O2); a pattern is matched without recursion.
TEST(CrawlBinary, MatchesItsExcludeAgainstTheLongestLinkItFollows) {
    testing::TestSite site;
    const std::string longest = "/" + std::string(Crawler::max_url_length - site.url("/").size(), 'a');
    site.add_page("/", {longest, "/paper.pdf", "/data.zip"});
    site.add_page(longest, {});
    const BinaryRun run = run_crawl_binary({site.url("/"), "--exclude", "*.zip", "--exclude", "*.pdf"});
    EXPECT_EQ(run.exit_status, 0) << run.err;
    EXPECT_EQ(site.url(longest).size(), Crawler::max_url_length);
    EXPECT_EQ(site.requests_for(longest), 1u);
    EXPECT_EQ(site.requests_for("/paper.pdf"), 0u);
    EXPECT_EQ(site.requests_for("/data.zip"), 0u);
}

TEST(CrawlBinary, ExitsTwoOnBadUsage) {
    EXPECT_EQ(run_crawl_binary({"--max-tasks", "0"}).exit_status, 2);
    EXPECT_EQ(run_crawl_binary({"https://example.com/"}).exit_status, 2);
    EXPECT_EQ(run_crawl_binary({"--help"}).exit_status, 0);
}

TEST(CrawlBinary, PrintsWhatItHasAndExits130OnCtrlC) {
    lab::LabServer server(lab_options());
    server.start();
    // One worker: the three slow pages alone take 900 ms, so the crawl is still running when the
    // first request has arrived.
    const BinaryRun run = run_crawl_binary({server.url("/site/"), "--max-tasks", "1", "--json"},
                                     [&server] { return server.stats().requests >= 1; });
    EXPECT_EQ(run.exit_status, 130);
    const Json json = parse_json(run.out);
    EXPECT_TRUE(json.at("interrupted").boolean);
    EXPECT_LT(json.at("urls").number, 32);
}

}  // namespace
}  // namespace sixways::crawler
