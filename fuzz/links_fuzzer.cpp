// Fuzz target: the crawler's links (06_coroutines/crawler/links.hpp), from a page to the URLs it
// queues.
//
// It follows each link the way the crawler does (Crawler::url_to_follow): find_links on the page,
// resolve_reference against the page's URL, without_fragment, parse_http_url, to_string. None of
// it may crash, and:
//   - remove_dot_segments leaves no "." or ".." segment, keeps a leading '/', and changes nothing
//     the second time;
//   - a link resolved against an http page is absolute (it starts with a scheme); a link without
//     a scheme or authority of its own stays on the page's host: the result starts with the
//     page's "http://authority", followed by the path, query or fragment, never by more host;
//   - a link with a scheme but no authority ("mailto:x", "http:/x") resolves to a URL without an
//     authority too (RFC 3986 3.3: its path cannot start with "//", or it would read as one);
//   - the normal form of a URL the crawler queues parses back to the same URL: the crawler's
//     workers take it for granted (*parse_http_url(url) in Crawler::fetch).
//
// Input: the page's URL on the first line, then the page's HTML.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "06_coroutines/crawler/links.hpp"
#include "fuzz/fuzz_input.hpp"

namespace {

using sixways::fuzz::check;
namespace crawler = sixways::crawler;

// RFC 3986 Appendix B: a reference has a scheme when a ':' comes before any '/', '?' or '#', and
// not first. Returns the length of "scheme:", or 0.
std::size_t scheme_part(std::string_view reference) {
    const std::size_t colon = reference.find_first_of(":/?#");
    return colon != std::string_view::npos && colon > 0 && reference[colon] == ':' ? colon + 1 : 0;
}

// Does the reference have an authority ("//host" after its scheme, if any)?
bool has_authority(std::string_view reference) { return reference.substr(scheme_part(reference)).starts_with("//"); }

bool has_dot_segment(std::string_view path) {
    while (true) {
        const std::size_t slash = path.find('/');
        const std::string_view segment = path.substr(0, slash);
        if (segment == "." || segment == "..") return true;
        if (slash == std::string_view::npos) return false;
        path.remove_prefix(slash + 1);
    }
}

void check_remove_dot_segments(std::string_view path) {
    const std::string clean = crawler::remove_dot_segments(path);
    check(!has_dot_segment(clean), "remove_dot_segments leaves no '.' or '..' segment");
    check(!path.starts_with('/') || clean.starts_with('/'), "an absolute path stays absolute");
    check(crawler::remove_dot_segments(clean) == clean, "removing dot segments twice changes nothing");
}

void check_link(std::string_view page, const sixways::Url& page_url, std::string_view link) {
    check_remove_dot_segments(link);
    const std::string resolved = crawler::resolve_reference(page, link);
    check(scheme_part(resolved) > 0, "a link on an http page resolves to an absolute URL");
    if (scheme_part(link) == 0 && !has_authority(link)) {
        // "http://host:port" of the page, as written there: the authority ends at '/', '?' or '#'.
        const std::string_view origin = page.substr(0, page.find_first_of("/?#", scheme_part(page) + 2));
        check(resolved.starts_with(origin) &&
                  (resolved.size() == origin.size() || std::string_view("/?#").find(resolved[origin.size()]) !=
                                                           std::string_view::npos),
              "a relative link stays on the page's host");
    }
    if (scheme_part(link) > 0 && !has_authority(link)) {
        check(!has_authority(resolved), "a link without an authority resolves to a URL without one");
    }

    const std::optional<sixways::Url> url = crawler::parse_http_url(crawler::without_fragment(resolved));
    if (!url) return;
    if (scheme_part(link) == 0 && !has_authority(link)) {
        check(url->host == page_url.host && url->port == page_url.port, "the same host and port as the page");
    }
    const std::string normal = url->to_string();
    const std::optional<sixways::Url> again = crawler::parse_http_url(normal);
    check(again && *again == *url, "the URL the crawler queues parses back to the same URL");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    const std::size_t newline = input.find('\n');
    const std::string_view page = input.substr(0, newline);
    const std::string_view html = newline == std::string_view::npos ? std::string_view{} : input.substr(newline + 1);

    // The crawler only reads pages whose URL parsed; the links of any other page are still
    // resolved, for crashes, when its URL is absolute as resolve_reference requires.
    const std::optional<sixways::Url> page_url = crawler::parse_http_url(page);
    for (const std::string& link : crawler::find_links(html)) {
        check(link.size() <= html.size(), "a link is no longer than the page");
        if (page_url) {
            check_link(page, *page_url, link);
        } else {
            check_remove_dot_segments(link);
            if (scheme_part(page) > 0) crawler::resolve_reference(page, link);
        }
    }
    return 0;
}
