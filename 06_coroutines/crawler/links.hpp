// What the crawler reads from a page: the links in its HTML, and where each one points.
//
//   find_links(R"(<a href="../about#team">About</a>)")        -> {"../about#team"}
//   resolve_reference("http://h/site/docs/intro", "../about#team")
//                                                              -> "http://h/site/about#team"
//   without_fragment("http://h/site/about#team")               -> "http://h/site/about"
//   parse_http_url("HTTP://Example.COM:80/a?b")                -> Url{"example.com", 80, "/a?b"}
//
// A link on a page is a *reference* (RFC 3986, section 4.1): absolute ("http://h/x"), or relative
// to the page it is on ("x", "../x", "/x", "?page=2", "#top", "//otherhost/x"). Turning it into an
// absolute URL is "reference resolution" (section 5.2), the same steps a browser takes when you
// click the link. The 500 Lines crawler calls Python's urllib.parse.urljoin for it; we write the
// algorithm out, because a crawler that gets it wrong fetches pages that do not exist (or misses
// pages that do), and because it is short.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/url.hpp"

namespace sixways::crawler {

// The value of every `href` attribute in `html`, in order, duplicates included. A hand-written
// scanner, not a regular expression: libstdc++'s std::regex recurses once per character matched
// (GCC PR 86164), and an href value of 200 KB is enough to overflow an 8 MiB stack. It accepts what
// real pages write:
//   href="x"  href='x'  href=x  HREF = "x"   (any case, spaces around '=', quoted or not)
// and trims spaces around the value and turns `&amp;` into `&` (HTML writes "?a=1&amp;b=2").
// Its limits, on purpose (a crawler for a lesson, not a browser):
//   - it does not parse HTML: an href inside a comment or a <script> counts too, and so does
//     <base href>, <link href> (stylesheets) and <area href>; `src` (images, scripts) does not;
//   - `<base href>` does not change how later links resolve (a browser would honour it);
//   - no other character reference is decoded (`&#47;`, `&quot;` stay as they are);
//   - the page is scanned as bytes: fine for UTF-8 and Latin-1, not for UTF-16.
std::vector<std::string> find_links(std::string_view html);

// RFC 3986, section 5.2: the absolute URL that `reference` names when it appears in the document
// at `base`. `base` must be absolute (it has a scheme). The result keeps the reference's fragment
// (RFC 3986 does); the crawler drops it with without_fragment. Never throws: every string is a
// reference of some kind, and what it resolves to is checked afterwards (parse_http_url).
// Pages link to what is not quite a URL ("caf\xE9", "a b", "x|y"), so the path and the query of
// the result are percent-encoded as a browser does (section 2.1): every byte but the unreserved
// characters, the sub-delims, ':', '@', '/', '?' and an existing "%XX" becomes "%XX":
//   resolve_reference("http://h/d/", "caf\xE9?q=a b")   -> "http://h/d/caf%E9?q=a%20b"
std::string resolve_reference(std::string_view base, std::string_view reference);

// RFC 3986, section 5.2.4: "/a/b/c/./../../g" -> "/a/g". Applied to the path of every resolved URL.
std::string remove_dot_segments(std::string_view path);

// The URL without its "#fragment": the part after '#' names a place inside a page, never another
// page, and is not even sent to the server. "http://h/a#top" and "http://h/a" are one page.
std::string_view without_fragment(std::string_view url);

// An absolute URL the crawler can fetch: scheme http (any case), a valid host and port, no user
// info. The host is lowercased (host names are case-insensitive, RFC 3986 section 3.2.2), so that
// Url::to_string() gives one spelling per page: "HTTP://Example.com:80" and "http://example.com/"
// are the same URL. nullopt for anything else: mailto:, javascript:, ftp:, and https: too (this
// crawler speaks no TLS), or a URL common/url.hpp rejects (spaces, control characters).
std::optional<Url> parse_http_url(std::string_view absolute);

}  // namespace sixways::crawler
