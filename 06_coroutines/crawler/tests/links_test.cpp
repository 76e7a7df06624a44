// Finding links in HTML and resolving them (RFC 3986, section 5), without any network.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "06_coroutines/crawler/links.hpp"

namespace sixways::crawler {
namespace {

using Links = std::vector<std::string>;

TEST(FindLinks, ReadsHrefQuotedOrNotInAnyCaseWithSpacesAroundTheEqualsSign) {
    const std::string html = R"(<a href="a">A</a> <A HREF='b'>B</A> <a href=c>C</a> <a href = "d" >D</a>
<a class="x" href=e>E</a> <a/href="f">F</a>)";
    EXPECT_EQ(find_links(html), (Links{"a", "b", "c", "d", "e", "f"}));
}

TEST(FindLinks, EndsAnUnquotedValueAtSpaceOrTheEndOfTheTag) {
    EXPECT_EQ(find_links("<a href=/x/y>t</a> <a href=/z title=t>"), (Links{"/x/y", "/z"}));
}

TEST(FindLinks, SkipsAttributesThatOnlyEndInHrefAndTheBareWord) {
    EXPECT_EQ(find_links(R"(<a data-href="no" xhref="no">the word href, and href alone</a>)"), Links{});
}

TEST(FindLinks, TrimsSpacesAndDecodesAmpersands) {
    EXPECT_EQ(find_links(R"(<a href="  /search?a=1&amp;b=2  ">)"), (Links{"/search?a=1&b=2"}));
}

TEST(FindLinks, KeepsDuplicatesEmptyValuesAndFragmentsForTheCrawlerToSortOut) {
    EXPECT_EQ(find_links(R"(<a href="x"> <a href="x#top"> <a href="">)"), (Links{"x", "x#top", ""}));
}

TEST(FindLinks, StopsQuietlyAtAPageCutOffInsideAQuotedValue) {
    EXPECT_EQ(find_links(R"(<a href="one"> <a href="cut off)"), (Links{"one"}));
    EXPECT_EQ(find_links("<a href="), Links{});
    EXPECT_EQ(find_links("href"), Links{});
    EXPECT_EQ(find_links(""), Links{});
}

TEST(FindLinks, ReadsAHugeValueWithoutRecursing) {
    const std::string value(4 * 1024 * 1024, 'x');  // std::regex overflows the stack on far less
    const Links links = find_links("<a href=\"" + value + "\">");
    ASSERT_EQ(links.size(), 1u);
    EXPECT_EQ(links[0].size(), value.size());
}

TEST(FindLinks, CountsEveryHrefItSeesBecauseItDoesNotParseHtml) {
    // The documented limits: stylesheets and commented-out links count too.
    EXPECT_EQ(find_links(R"(<link href="style.css"> <!-- <a href="old"> -->)"), (Links{"style.css", "old"}));
}

// RFC 3986, section 5.4.1: every "normal example", against the RFC's own base.
TEST(ResolveReference, GivesTheResultsOfRfc3986NormalExamples) {
    const std::string base = "http://a/b/c/d;p?q";
    const std::vector<std::pair<std::string, std::string>> examples = {
        {"g:h", "g:h"},
        {"g", "http://a/b/c/g"},
        {"./g", "http://a/b/c/g"},
        {"g/", "http://a/b/c/g/"},
        {"/g", "http://a/g"},
        {"//g", "http://g"},
        {"?y", "http://a/b/c/d;p?y"},
        {"g?y", "http://a/b/c/g?y"},
        {"#s", "http://a/b/c/d;p?q#s"},
        {"g#s", "http://a/b/c/g#s"},
        {"g?y#s", "http://a/b/c/g?y#s"},
        {";x", "http://a/b/c/;x"},
        {"g;x", "http://a/b/c/g;x"},
        {"g;x?y#s", "http://a/b/c/g;x?y#s"},
        {"", "http://a/b/c/d;p?q"},
        {".", "http://a/b/c/"},
        {"./", "http://a/b/c/"},
        {"..", "http://a/b/"},
        {"../", "http://a/b/"},
        {"../g", "http://a/b/g"},
        {"../..", "http://a/"},
        {"../../", "http://a/"},
        {"../../g", "http://a/g"},
    };
    for (const auto& [reference, expected] : examples) {
        EXPECT_EQ(resolve_reference(base, reference), expected) << "reference \"" << reference << "\"";
    }
}

// RFC 3986, section 5.4.2: the "abnormal examples", where a careless resolver goes wrong.
TEST(ResolveReference, GivesTheResultsOfRfc3986AbnormalExamples) {
    const std::string base = "http://a/b/c/d;p?q";
    const std::vector<std::pair<std::string, std::string>> examples = {
        {"../../../g", "http://a/g"},        // more ".." than segments: stop at the root
        {"../../../../g", "http://a/g"},
        {"/./g", "http://a/g"},
        {"/../g", "http://a/g"},
        {"g.", "http://a/b/c/g."},           // only whole segments "." and ".." are special
        {".g", "http://a/b/c/.g"},
        {"g..", "http://a/b/c/g.."},
        {"..g", "http://a/b/c/..g"},
        {"./../g", "http://a/b/g"},
        {"./g/.", "http://a/b/c/g/"},
        {"g/./h", "http://a/b/c/g/h"},
        {"g/../h", "http://a/b/c/h"},
        {"g;x=1/./y", "http://a/b/c/g;x=1/y"},
        {"g;x=1/../y", "http://a/b/c/y"},
        {"g?y/./x", "http://a/b/c/g?y/./x"},  // dots in a query or a fragment are not segments
        {"g?y/../x", "http://a/b/c/g?y/../x"},
        {"g#s/./x", "http://a/b/c/g#s/./x"},
        {"g#s/../x", "http://a/b/c/g#s/../x"},
        {"http:g", "http:g"},                 // the strict parser: a scheme makes it absolute
    };
    for (const auto& [reference, expected] : examples) {
        EXPECT_EQ(resolve_reference(base, reference), expected) << "reference \"" << reference << "\"";
    }
}

TEST(ResolveReference, ResolvesTheLabSitesRelativeLinksAgainstTheirOwnPage) {
    const std::string site = "http://127.0.0.1:8080/site/";
    EXPECT_EQ(resolve_reference(site, "blog/"), site + "blog/");
    EXPECT_EQ(resolve_reference(site + "blog/?page=2", "post-3"), site + "blog/post-3");
    EXPECT_EQ(resolve_reference(site + "blog/", "?page=2"), site + "blog/?page=2");
    EXPECT_EQ(resolve_reference(site + "blog/", "../about"), site + "about");
    EXPECT_EQ(resolve_reference(site + "docs/", "../docs/"), site + "docs/");
    EXPECT_EQ(resolve_reference(site + "docs/intro", "../"), site);
    EXPECT_EQ(resolve_reference(site + "contact", "./about"), site + "about");
    EXPECT_EQ(resolve_reference(site + "about", "#top"), site + "about#top");
    EXPECT_EQ(resolve_reference(site + "slow/1", "2"), site + "slow/2");
    EXPECT_EQ(resolve_reference(site, "mailto:lab@example.com"), "mailto:lab@example.com");
}

TEST(ResolveReference, PutsASlashBeforeARelativePathWhenTheBaseHasNoPath) {
    EXPECT_EQ(resolve_reference("http://h", "x"), "http://h/x");
    EXPECT_EQ(resolve_reference("http://h", "?q"), "http://h?q");
}

TEST(ResolveReference, PercentEncodesWhatAPathOrQueryMayNotHold) {
    const std::string base = "http://h/dir/page";
    const std::vector<std::pair<std::string, std::string>> examples = {
        {"caf\xE9", "http://h/dir/caf%E9"},  // Latin-1
        {"caf\xC3\xA9", "http://h/dir/caf%C3%A9"},  // UTF-8
        {"/x\xFF\xFE", "http://h/x%FF%FE"},
        {"/sp ace?q=a b", "http://h/sp%20ace?q=a%20b"},
        {"/\"<>\\^`{|}", "http://h/%22%3C%3E%5C%5E%60%7B%7C%7D"},
        {"/tab\there\x7f", "http://h/tab%09here%7F"},
        {"/ok%20already%e9", "http://h/ok%20already%e9"},  // encoded once is enough
        {"/100%?p=%zz%", "http://h/100%25?p=%25zz%25"},   // a '%' that starts no "%XX"
        {"/keep-._~!$&'()*+,;=:@/?a=/?:@", "http://h/keep-._~!$&'()*+,;=:@/?a=/?:@"},
        {"/[x]", "http://h/%5Bx%5D"},
        {"?q=\xE9", "http://h/dir/page?q=%E9"},
        {"//other.test/\xE9", "http://other.test/%E9"},
    };
    for (const auto& [reference, expected] : examples) {
        EXPECT_EQ(resolve_reference(base, reference), expected) << reference;
    }
    // The fragment is not sent, and the crawler drops it: it is left as it is.
    EXPECT_EQ(resolve_reference(base, "a#\xE9 x"), "http://h/dir/a#\xE9 x");
}

// Found by fuzz/links_fuzzer.cpp: "http:/.//evil.example/x" has no authority, but removing its dot
// segments leaves the path "//evil.example/x", and written after "http:" that reads as a host.
TEST(ResolveReference, NeverTurnsAPathIntoAnAuthority) {
    const std::string resolved = resolve_reference("http://a/b", "http:/.//evil.example/x");
    EXPECT_EQ(resolved, "http:/.//evil.example/x");
    EXPECT_FALSE(parse_http_url(resolved));
    EXPECT_EQ(resolve_reference("x:", "a/..//b"), "x:/.//b");
}

TEST(RemoveDotSegments, FollowsTheRfcsOwnExamples) {
    EXPECT_EQ(remove_dot_segments("/a/b/c/./../../g"), "/a/g");
    EXPECT_EQ(remove_dot_segments("mid/content=5/../6"), "mid/6");
    EXPECT_EQ(remove_dot_segments("/site/docs/../docs/"), "/site/docs/");
    EXPECT_EQ(remove_dot_segments(""), "");
}

TEST(WithoutFragment, DropsEverythingFromTheFirstHash) {
    EXPECT_EQ(without_fragment("http://h/a#top"), "http://h/a");
    EXPECT_EQ(without_fragment("http://h/a?b#c#d"), "http://h/a?b");
    EXPECT_EQ(without_fragment("http://h/a"), "http://h/a");
}

TEST(ParseHttpUrl, GivesOneSpellingPerPage) {
    const std::optional<Url> url = parse_http_url("HTTP://Example.COM:80/a?b");
    ASSERT_TRUE(url);
    EXPECT_EQ(url->host, "example.com");
    EXPECT_EQ(url->port, 80);
    EXPECT_EQ(url->to_string(), "http://example.com/a?b");
    EXPECT_EQ(parse_http_url("http://example.com")->to_string(), "http://example.com/");
    EXPECT_EQ(parse_http_url("http://[::1]:8080/x")->host, "::1");
}

TEST(ParseHttpUrl, RefusesWhatTheCrawlerCannotFetch) {
    for (const char* text : {"https://example.com/", "ftp://example.com/", "mailto:lab@example.com",
                             "javascript:void(0)", "data:text/html,hi", "http:g", "http://a b/", "http://user@h/",
                             "http:///path", "//example.com/"}) {
        EXPECT_FALSE(parse_http_url(text)) << text;
    }
}

}  // namespace
}  // namespace sixways::crawler
