// Which URLs the crawler follows (500 Lines' test_strict_host_checking, test_lenient_host_checking,
// test_exclude, test_roots, test_deep_root, test_non_http), without any network: url_allowed only.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "06_coroutines/crawler/crawler.hpp"

namespace sixways::crawler {
namespace {

struct Scope {
    coroutines::EventLoop loop;
    std::unique_ptr<Crawler> crawler;

    explicit Scope(const std::vector<std::string>& roots, bool strict = true, std::vector<std::string> exclude = {}) {
        CrawlerOptions options;
        for (const std::string& root : roots) {
            options.roots.push_back(parse_url(root));
            options.addresses[host_key(options.roots.back())] = {Address{}};  // never connected to here
        }
        options.strict = strict;
        options.exclude = std::move(exclude);
        crawler = std::make_unique<Crawler>(loop, options);
    }
    bool allowed(const std::string& url) const { return crawler->url_allowed(url); }
};

TEST(Scope, StrictFollowsOnlyTheRootsExactHost) {
    const Scope scope({"http://example.com/"});
    EXPECT_TRUE(scope.allowed("http://example.com/"));
    EXPECT_TRUE(scope.allowed("http://example.com/a/b?c"));
    EXPECT_TRUE(scope.allowed("http://EXAMPLE.com/"));  // host names are case-insensitive
    EXPECT_FALSE(scope.allowed("http://www.example.com/"));
    EXPECT_FALSE(scope.allowed("http://foo.example.com/"));
    EXPECT_FALSE(scope.allowed("http://example.org/"));
}

TEST(Scope, StaysOnTheRootsPortInEitherMode) {
    EXPECT_FALSE(Scope({"http://example.com/"}).allowed("http://example.com:8080/"));
    EXPECT_TRUE(Scope({"http://example.com:8080/"}).allowed("http://example.com:8080/x"));
    EXPECT_FALSE(Scope({"http://example.com/"}, false).allowed("http://www.example.com:81/"));
    EXPECT_TRUE(Scope({"http://example.com/"}).allowed("http://example.com:80/x"));  // 80 is the default
}

TEST(Scope, LenientFollowsTheRootsDomainWithoutWwwAndEverySubdomain) {
    const Scope scope({"http://example.com/"}, false);
    EXPECT_TRUE(scope.allowed("http://example.com/"));
    EXPECT_TRUE(scope.allowed("http://www.example.com/"));
    EXPECT_TRUE(scope.allowed("http://foo.example.com/"));
    EXPECT_TRUE(scope.allowed("http://a.b.example.com/"));
    EXPECT_FALSE(scope.allowed("http://badexample.com/"));     // a suffix, but not a subdomain
    EXPECT_FALSE(scope.allowed("http://example.com.evil/"));
    EXPECT_FALSE(scope.allowed("http://example.org/"));
}

TEST(Scope, LenientTakesTheDomainOfAWwwRoot) {
    const Scope scope({"http://www.example.co.uk/"}, false);
    EXPECT_TRUE(scope.allowed("http://example.co.uk/"));
    EXPECT_TRUE(scope.allowed("http://shop.example.co.uk/"));
    EXPECT_FALSE(scope.allowed("http://other.co.uk/"));  // 500 Lines' last-two-labels rule lets this in
}

TEST(Scope, AnIpAddressRootMatchesOnlyItselfEvenWhenLenient) {
    const Scope scope({"http://127.0.0.1:8080/site/"}, false);
    EXPECT_TRUE(scope.allowed("http://127.0.0.1:8080/other"));
    EXPECT_FALSE(scope.allowed("http://1.127.0.0.1:8080/"));
    EXPECT_FALSE(scope.allowed("http://localhost:8080/"));
    const Scope ipv6({"http://[::1]:8080/"}, false);
    EXPECT_TRUE(ipv6.allowed("http://[::1]:8080/x"));
    EXPECT_FALSE(ipv6.allowed("http://127.0.0.1:8080/x"));
}

TEST(Scope, ExcludeSkipsEveryUrlThatAnyPatternMatches) {
    const Scope scope({"http://example.com/"}, true, {"*pattern*", "*.pdf", "http://example.com/private/*"});
    EXPECT_TRUE(scope.allowed("http://example.com/"));
    EXPECT_FALSE(scope.allowed("http://example.com/pattern"));
    EXPECT_FALSE(scope.allowed("http://example.com/a/with-pattern-inside?x"));
    EXPECT_FALSE(scope.allowed("http://example.com/paper.pdf"));
    EXPECT_TRUE(scope.allowed("http://example.com/paper.pdf.html"));
    EXPECT_FALSE(scope.allowed("http://example.com/private/"));
    EXPECT_FALSE(scope.allowed("http://EXAMPLE.com:80/private/x#top"));  // matched in normal form
    EXPECT_TRUE(scope.allowed("http://example.com/public/private/x"));
}

TEST(Scope, NeverFollowsAUrlLongerThanServersAccept) {
    const Scope scope({"http://example.com/"}, true, {"http://example.com/a*b"});
    const std::string base = "http://example.com/";
    EXPECT_TRUE(scope.allowed(base + std::string(Crawler::max_url_length - base.size(), 'a')));
    EXPECT_FALSE(scope.allowed(base + std::string(Crawler::max_url_length - base.size() + 1, 'x')));
}

TEST(MatchesPattern, TakesAPatternWithoutAStarAsTheWholeUrl) {
    EXPECT_TRUE(matches_pattern("http://h/a", "http://h/a"));
    EXPECT_FALSE(matches_pattern("http://h/a", "http://h/ab"));
    EXPECT_FALSE(matches_pattern("http://h/a", "http://h/"));
    EXPECT_FALSE(matches_pattern("h/a", "http://h/a"));  // not "anywhere", as a regex search was
}

TEST(MatchesPattern, LetsAStarStandForAnyRunOfCharactersNoneIncluded) {
    EXPECT_TRUE(matches_pattern("*", "http://h/"));
    EXPECT_TRUE(matches_pattern("*.pdf", "http://h/a/b.pdf"));
    EXPECT_TRUE(matches_pattern("*.pdf", ".pdf"));
    EXPECT_FALSE(matches_pattern("*.pdf", "http://h/a.pdf?x"));
    EXPECT_TRUE(matches_pattern("http://h/*", "http://h/"));
    EXPECT_TRUE(matches_pattern("http://h/*/x", "http://h/a/b/x"));
    EXPECT_TRUE(matches_pattern("http://h/**x", "http://h/x"));
    EXPECT_FALSE(matches_pattern("http://h/a*a", "http://h/a"));  // head and tail may not overlap
    EXPECT_TRUE(matches_pattern("http://h/a*a", "http://h/aa"));
}

TEST(MatchesPattern, FindsThePiecesBetweenStarsInOrder) {
    EXPECT_TRUE(matches_pattern("*a*b*c*", "http://h/xaxbxcx"));
    EXPECT_FALSE(matches_pattern("*a*b*c*", "http://h/xcxbxa"));
    EXPECT_TRUE(matches_pattern("*ab*ab*", "http://h/abab"));
    EXPECT_FALSE(matches_pattern("*ab*ab*", "http://h/aba"));  // the pieces may not overlap
    EXPECT_TRUE(matches_pattern("*?print=*&*", "http://h/p?print=1&x=2"));  // ? and & are themselves
    EXPECT_FALSE(matches_pattern("*[a-z]*", "http://h/abc"));  // and so are [ ] and -
    EXPECT_TRUE(matches_pattern("*a*.pdf", "http://h/a.pdf/b.pdf"));  // the tail is the URL's end
}

// A std::regex recursed once per character and ran out of stack on a link of 8 KiB. The match
// has no recursion: a URL far longer than any the crawler follows, and many stars that each could
// go many ways, only take time.
TEST(MatchesPattern, NeedsNoStackForALongUrlOrManyStars) {
    const std::string url = "http://h/" + std::string(1024 * 1024, 'a') + ".pdf";
    EXPECT_TRUE(matches_pattern("*.pdf", url));
    EXPECT_FALSE(matches_pattern("*.zip", url));
    std::string stars;
    for (int i = 0; i < 100; ++i) stars += "a*";
    EXPECT_TRUE(matches_pattern("http://h/" + stars + ".pdf", url));
    EXPECT_FALSE(matches_pattern("http://h/" + stars + "b*.pdf", url));
}

TEST(CheckPattern, RefusesAPatternThatNoUrlFollowedCanMatch) {
    for (const char* pattern : {"*", "*.pdf", "http://h/*", "http://"}) {
        EXPECT_NO_THROW(check_pattern(pattern)) << pattern;
    }
    for (const char* pattern : {"", "skip", "\\.pdf$", "^http://h/", "(a|b)", "h*", "HTTP://h/*"}) {
        EXPECT_THROW(check_pattern(pattern), std::invalid_argument) << pattern;
    }
}

TEST(Scope, EveryRootsHostIsInScope) {
    const Scope scope({"http://a/", "http://b/"});
    EXPECT_TRUE(scope.allowed("http://a/a"));
    EXPECT_TRUE(scope.allowed("http://b/b"));
    EXPECT_FALSE(scope.allowed("http://c/c"));
    EXPECT_FALSE(scope.allowed("http://127.0.0.1/"));
}

TEST(Scope, ADeepRootPutsItsWholeHostInScope) {
    const Scope scope({"http://a/a/b/c?d#fragment"});
    EXPECT_TRUE(scope.allowed("http://a/b"));
    EXPECT_TRUE(scope.allowed("http://a/"));
}

TEST(Scope, OnlyHttpUrlsAreEverFollowed) {
    const Scope scope({"http://example.com/"});
    for (const char* url : {"https://example.com/", "ftp://example.com/", "mailto:me@example.com",
                            "javascript:void(0)", "file:///etc/passwd", "example.com/x"}) {
        EXPECT_FALSE(scope.allowed(url)) << url;
    }
}

TEST(Scope, ACrawlerRefusesBadOptions) {
    coroutines::EventLoop loop;
    CrawlerOptions options;
    options.roots = {parse_url("http://example.com/")};
    EXPECT_THROW(Crawler(loop, options), std::invalid_argument);  // no address for the root
    options.addresses[host_key(options.roots[0])] = {Address{}};
    options.max_tasks = 0;
    EXPECT_THROW(Crawler(loop, options), std::invalid_argument);
    options.max_tasks = 1;
    options.max_tries = 0;
    EXPECT_THROW(Crawler(loop, options), std::invalid_argument);
    options.max_tries = 1;
    options.exclude = {"*.pdf", "("};
    EXPECT_THROW(Crawler(loop, options), std::invalid_argument);
}

TEST(HostKey, IsTheLowercaseHostAndPortWithIpv6InBrackets) {
    EXPECT_EQ(host_key(parse_url("http://Example.COM/")), "example.com:80");
    EXPECT_EQ(host_key(parse_url("http://a.test:8080/x")), "a.test:8080");
    EXPECT_EQ(host_key(parse_url("http://[::1]:8080/")), "[::1]:8080");
}

}  // namespace
}  // namespace sixways::crawler
