#include "common/url.hpp"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace sixways {
namespace {

// What parse_url says about a URL it rejects, or "(accepted)".
std::string error_for(std::string_view text) {
    try {
        parse_url(text);
    } catch (const UrlError& error) {
        return error.what();
    }
    return "(accepted)";
}

TEST(ParseUrl, SplitsHostPortAndTarget) {
    const Url url = parse_url("http://example.com:8080/a/b?c=d&e=f");
    EXPECT_EQ(url.host, "example.com");
    EXPECT_EQ(url.port, 8080);
    EXPECT_EQ(url.target, "/a/b?c=d&e=f");
}

TEST(ParseUrl, DefaultsToPort80AndPathSlash) {
    const Url url = parse_url("http://example.com");
    EXPECT_EQ(url.host, "example.com");
    EXPECT_EQ(url.port, 80);
    EXPECT_EQ(url.target, "/");
}

TEST(ParseUrl, AcceptsTheSchemeInAnyCaseAndKeepsTheHostAsWritten) {
    const Url url = parse_url("HtTp://Example.COM/Path");
    EXPECT_EQ(url.host, "Example.COM");
    EXPECT_EQ(url.target, "/Path");
}

TEST(ParseUrl, KeepsTheQueryAndDropsTheFragment) {
    EXPECT_EQ(parse_url("http://h/p?q=1#section").target, "/p?q=1");
    EXPECT_EQ(parse_url("http://h/p#section?not-a-query").target, "/p");
    EXPECT_EQ(parse_url("http://h#section").target, "/");
    EXPECT_EQ(parse_url("http://h:81#section").port, 81);
}

TEST(ParseUrl, GivesAQueryWithoutPathTheRootPath) {
    EXPECT_EQ(parse_url("http://h?q=1").target, "/?q=1");
    EXPECT_EQ(parse_url("http://h:8080?q=1").target, "/?q=1");
}

TEST(ParseUrl, AcceptsAnIpv4Literal) {
    const Url url = parse_url("http://127.0.0.1:8080/");
    EXPECT_EQ(url.host, "127.0.0.1");
    EXPECT_EQ(url.port, 8080);
}

TEST(ParseUrl, StoresAnIpv6LiteralWithoutItsBrackets) {
    const Url url = parse_url("http://[::1]:8080/x");
    EXPECT_EQ(url.host, "::1");
    EXPECT_EQ(url.port, 8080);
    EXPECT_EQ(url.target, "/x");
    EXPECT_EQ(parse_url("http://[2001:db8::7]").host, "2001:db8::7");
    EXPECT_EQ(parse_url("http://[::ffff:127.0.0.1]/").host, "::ffff:127.0.0.1");
}

TEST(ParseUrl, AcceptsTheLargestPort) { EXPECT_EQ(parse_url("http://h:65535/").port, 65535); }

TEST(ParseUrl, AcceptsUnderscoresAndHyphensInHostNames) {
    EXPECT_EQ(parse_url("http://my_host-1.example/").host, "my_host-1.example");
}

TEST(ParseUrl, RejectsHttpsAsNotSupported) {
    EXPECT_EQ(error_for("https://example.com/"), "https:// is not supported (only http://)");
    EXPECT_EQ(error_for("HTTPS://example.com/"), "https:// is not supported (only http://)");
}

TEST(ParseUrl, RejectsOtherSchemesByName) {
    EXPECT_EQ(error_for("ftp://example.com/"), "ftp:// is not supported (only http://)");
    EXPECT_EQ(error_for("ws://example.com/"), "ws:// is not supported (only http://)");
}

TEST(ParseUrl, RejectsAUrlWithoutScheme) {
    const std::string message = "missing \"http://\" at the start of the URL";
    EXPECT_EQ(error_for("example.com/"), message);
    EXPECT_EQ(error_for("localhost:8080/"), message);
    EXPECT_EQ(error_for("//example.com/"), message);
    EXPECT_EQ(error_for("http:/example.com/"), message);
    EXPECT_EQ(error_for("://example.com/"), message);
    // A "://" later in the text (here in the query) is not a scheme.
    EXPECT_EQ(error_for("example.com/?next=http://other/"), message);
}

TEST(ParseUrl, RejectsAnEmptyUrl) { EXPECT_EQ(error_for(""), "empty URL"); }

TEST(ParseUrl, RejectsAMissingHost) {
    EXPECT_EQ(error_for("http://"), "missing host");
    EXPECT_EQ(error_for("http:///path"), "missing host");
    EXPECT_EQ(error_for("http://:8080/"), "missing host");
    EXPECT_EQ(error_for("http://?q"), "missing host");
    EXPECT_EQ(error_for("http://[]:8080/"), "missing host (empty IPv6 literal \"[]\")");
}

TEST(ParseUrl, RejectsAnEmptyPort) {
    EXPECT_EQ(error_for("http://h:/"), "empty port after ':'");
    EXPECT_EQ(error_for("http://h:"), "empty port after ':'");
    EXPECT_EQ(error_for("http://[::1]:/"), "empty port after ':'");
}

TEST(ParseUrl, RejectsPortsThatAreNotANumberFrom1To65535) {
    EXPECT_EQ(error_for("http://h:abc/"), "bad port \"abc\" (must be a number from 1 to 65535)");
    EXPECT_EQ(error_for("http://h:80x/"), "bad port \"80x\" (must be a number from 1 to 65535)");
    EXPECT_EQ(error_for("http://h:-1/"), "bad port \"-1\" (must be a number from 1 to 65535)");
    EXPECT_EQ(error_for("http://h:0/"), "bad port \"0\" (must be a number from 1 to 65535)");
    EXPECT_EQ(error_for("http://h:65536/"), "bad port \"65536\" (must be a number from 1 to 65535)");
    EXPECT_EQ(error_for("http://h:99999999999999999999999/"),
              "bad port \"99999999999999999999999\" (must be a number from 1 to 65535)");
    EXPECT_EQ(error_for("http://[::1]:0/"), "bad port \"0\" (must be a number from 1 to 65535)");
}

TEST(ParseUrl, RejectsUserInfo) {
    EXPECT_EQ(error_for("http://user@h/"), "user info (user@host) is not supported in the URL");
    EXPECT_EQ(error_for("http://user:secret@h:8080/"),
              "user info (user@host) is not supported in the URL");
}

TEST(ParseUrl, AcceptsAnAtSignInThePath) { EXPECT_EQ(parse_url("http://h/@me").target, "/@me"); }

TEST(ParseUrl, RejectsAnUnterminatedIpv6Literal) {
    EXPECT_EQ(error_for("http://[::1/"), "unterminated IPv6 literal (missing ']')");
    EXPECT_EQ(error_for("http://[::1"), "unterminated IPv6 literal (missing ']')");
}

TEST(ParseUrl, RejectsTextBetweenAnIpv6LiteralAndItsPort) {
    EXPECT_EQ(error_for("http://[::1]x:80/"), "unexpected \"x:80\" after the IPv6 literal");
}

TEST(ParseUrl, RejectsSomethingInBracketsThatIsNotAnIpv6Address) {
    EXPECT_EQ(error_for("http://[example.com]/"), "bad IPv6 address \"[example.com]\"");
    EXPECT_EQ(error_for("http://[127.0.0.1]/"), "bad IPv6 address \"[127.0.0.1]\"");
}

TEST(ParseUrl, RejectsAnIpv6AddressWithoutBrackets) {
    EXPECT_EQ(error_for("http://::1/"), "an IPv6 address must be written in brackets, e.g. http://[::1]:8080/");
    EXPECT_EQ(error_for("http://fe80::1:8080/"),
              "an IPv6 address must be written in brackets, e.g. http://[::1]:8080/");
}

TEST(ParseUrl, RejectsCharactersThatCannotBeInAHostName) {
    EXPECT_EQ(error_for("http://exa%6dple.com/"), "bad character '%' in host \"exa%6dple.com\"");
    EXPECT_EQ(error_for("http://h]/"), "bad character ']' in host \"h]\"");
    EXPECT_EQ(error_for("http://b\xc3\xa4r.example/"), "bad character 0xC3 in host \"b\xc3\xa4r.example\"");
}

TEST(ParseUrl, RejectsASpaceAnywhere) {
    EXPECT_EQ(error_for("http://h/a b"), "URL contains a space at position 10 (write it as %20)");
    EXPECT_EQ(error_for(" http://h/"), "URL contains a space at position 0 (write it as %20)");
    EXPECT_EQ(error_for("http://h/ "), "URL contains a space at position 9 (write it as %20)");
}

TEST(ParseUrl, RejectsCrAndLfSoThatAUrlCannotInjectHeaderLines) {
    EXPECT_EQ(error_for("http://h/\r\nX-Injected: 1"), "URL contains the control character 0x0D at position 9");
    EXPECT_EQ(error_for("http://h/\nX"), "URL contains the control character 0x0A at position 9");
    EXPECT_EQ(error_for("http://h\r\n/"), "URL contains the control character 0x0D at position 8");
}

TEST(ParseUrl, RejectsOtherControlCharactersAndDel) {
    EXPECT_EQ(error_for("http://h/\t"), "URL contains the control character 0x09 at position 9");
    EXPECT_EQ(error_for(std::string_view("http://h/\0x", 11)),
              "URL contains the control character 0x00 at position 9");
    EXPECT_EQ(error_for("http://h/\x7f"), "URL contains the control character 0x7F at position 9");
    EXPECT_EQ(error_for("http\x01://h/"), "URL contains the control character 0x01 at position 4");
}

// RFC 3986 section 2.1: a request target holds printable ASCII only. Bytes it may not hold are
// sent as "%XX", and what is already encoded stays as it is.
TEST(ParseUrl, PercentEncodesTheBytesATargetMayNotHold) {
    EXPECT_EQ(parse_url("http://127.0.0.1:8080/caf\xC3\xA9?q=\xC3\xA9").target, "/caf%C3%A9?q=%C3%A9");
    EXPECT_EQ(parse_url("http://h/caf\xE9|\"<>").target, "/caf%E9%7C%22%3C%3E");
    EXPECT_EQ(parse_url("http://h?\xFF").target, "/?%FF");
    EXPECT_EQ(parse_url("http://h/a%20b%c3%A9/100%").target, "/a%20b%c3%A9/100%25");
    EXPECT_EQ(parse_url("http://h/caf\xC3\xA9#\xC3\xA9").to_string(), "http://h/caf%C3%A9");
}

TEST(PercentEncode, KeepsWhatAPathOrQueryMayHoldAndAnExistingEscape) {
    EXPECT_EQ(percent_encode("/a-b._~!$&'()*+,;=:@/?x=1%2F"), "/a-b._~!$&'()*+,;=:@/?x=1%2F");
    EXPECT_EQ(percent_encode("a b\x01%zz%4"), "a%20b%01%25zz%254");
    EXPECT_EQ(percent_encode(percent_encode("caf\xC3\xA9 x")), "caf%C3%A9%20x");
}

TEST(UrlHostHeader, OmitsPort80) {
    EXPECT_EQ(parse_url("http://example.com/").host_header(), "example.com");
    EXPECT_EQ(parse_url("http://example.com:80/").host_header(), "example.com");
}

TEST(UrlHostHeader, AddsAnyOtherPort) {
    EXPECT_EQ(parse_url("http://example.com:8080/").host_header(), "example.com:8080");
}

TEST(UrlHostHeader, PutsAnIpv6LiteralBackInBrackets) {
    EXPECT_EQ(parse_url("http://[::1]:8080/").host_header(), "[::1]:8080");
    EXPECT_EQ(parse_url("http://[::1]/").host_header(), "[::1]");
}

TEST(UrlToString, WritesTheNormalForm) {
    EXPECT_EQ(parse_url("HTTP://h:80").to_string(), "http://h/");
    EXPECT_EQ(parse_url("http://[::1]:8080?q#f").to_string(), "http://[::1]:8080/?q");
    EXPECT_EQ(parse_url("http://127.0.0.1:8080/a/b").to_string(), "http://127.0.0.1:8080/a/b");
}

TEST(UrlToString, ParsesBackToTheSameUrl) {
    for (const char* text : {"http://example.com/", "http://example.com:8080/a?b=c", "http://[::1]:8080/x",
                             "http://[2001:db8::1]/", "http://10.0.0.1:65535/deep/path/"}) {
        const Url url = parse_url(text);
        EXPECT_EQ(parse_url(url.to_string()), url) << text;
    }
}

}  // namespace
}  // namespace sixways
