// Links: finding them in a page (find_links) and resolving them against the page's URL (RFC 3986).
#include "06_coroutines/crawler/links.hpp"

#include <cstddef>

namespace sixways::crawler {

namespace {

char to_lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

// HTML's "ASCII whitespace": space, tab, LF, FF, CR.
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r'; }

std::string_view trim(std::string_view text) {
    while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
    while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
    return text;
}

// Does `text` hold "href" (any case) at `at`?
bool is_href_at(std::string_view text, std::size_t at) {
    static constexpr std::string_view name = "href";
    if (at + name.size() > text.size()) return false;
    for (std::size_t i = 0; i < name.size(); ++i) {
        if (to_lower(text[at + i]) != name[i]) return false;
    }
    return true;
}

// "a=1&amp;b=2" -> "a=1&b=2": the one character reference that links really contain.
std::string decode_amp(std::string_view value) {
    static constexpr std::string_view amp = "&amp;";
    std::string out;
    out.reserve(value.size());
    for (std::size_t i = 0; i < value.size();) {
        if (value.substr(i, amp.size()) == amp) {
            out += '&';
            i += amp.size();
        } else {
            out += value[i++];
        }
    }
    return out;
}

// A URI reference split into its five parts (RFC 3986, Appendix B). Each part but the path may be
// absent, which is not the same as empty: "http://h/p?" has an empty query, "http://h/p" has none,
// and section 5.2 treats them differently.
struct Parts {
    std::optional<std::string_view> scheme;
    std::optional<std::string_view> authority;
    std::string_view path;
    std::optional<std::string_view> query;
    std::optional<std::string_view> fragment;
};

// Appendix B's regular expression, ^(([^:/?#]+):)?(//([^/?#]*))?([^?#]*)(\?([^#]*))?(#(.*))?,
// written as four searches.
Parts split(std::string_view text) {
    Parts parts;
    // A scheme is what comes before the first ':', if no '/', '?' or '#' comes before it.
    if (const std::size_t colon = text.find_first_of(":/?#"); colon != std::string_view::npos && colon > 0 &&
                                                              text[colon] == ':') {
        parts.scheme = text.substr(0, colon);
        text.remove_prefix(colon + 1);
    }
    if (text.starts_with("//")) {
        const std::size_t end = text.find_first_of("/?#", 2);
        parts.authority = text.substr(2, end == std::string_view::npos ? std::string_view::npos : end - 2);
        text.remove_prefix(end == std::string_view::npos ? text.size() : end);
    }
    const std::size_t path_end = text.find_first_of("?#");
    parts.path = text.substr(0, path_end);
    text.remove_prefix(path_end == std::string_view::npos ? text.size() : path_end);
    if (text.starts_with('?')) {
        const std::size_t end = text.find('#');
        parts.query = text.substr(1, end == std::string_view::npos ? std::string_view::npos : end - 1);
        text.remove_prefix(end == std::string_view::npos ? text.size() : end);
    }
    if (text.starts_with('#')) parts.fragment = text.substr(1);
    return parts;
}

// Section 5.2.3: a relative path is relative to the base's "directory", everything up to and
// including its last '/'. "post-2" on "/site/blog/post-1" is "/site/blog/post-2".
std::string merge(const Parts& base, std::string_view reference_path) {
    if (base.authority && base.path.empty()) return "/" + std::string(reference_path);
    const std::size_t slash = base.path.rfind('/');
    if (slash == std::string_view::npos) return std::string(reference_path);
    return std::string(base.path.substr(0, slash + 1)) + std::string(reference_path);
}

}  // namespace

std::vector<std::string> find_links(std::string_view html) {
    std::vector<std::string> links;
    for (std::size_t at = 0; at < html.size(); ++at) {
        if (!is_href_at(html, at)) continue;
        // An attribute name starts after whitespace (or after '/': "<a/href=x>", which browsers
        // accept). This skips "data-href" and words that merely end in "href".
        if (at == 0 || !(is_space(html[at - 1]) || html[at - 1] == '/')) continue;
        std::size_t i = at + 4;
        while (i < html.size() && is_space(html[i])) ++i;
        if (i == html.size() || html[i] != '=') continue;  // "href" alone: a word, or a bare attribute
        ++i;
        while (i < html.size() && is_space(html[i])) ++i;
        if (i == html.size()) break;

        std::string_view value;
        if (html[i] == '"' || html[i] == '\'') {
            const std::size_t close = html.find(html[i], i + 1);
            if (close == std::string_view::npos) break;  // an unterminated quote: the page is cut off
            value = html.substr(i + 1, close - i - 1);
            i = close;
        } else {
            std::size_t end = i;
            while (end < html.size() && !is_space(html[end]) && html[end] != '>') ++end;
            value = html.substr(i, end - i);
            i = end;
        }
        links.push_back(decode_amp(trim(value)));
        at = i;  // go on after the value: an href inside a quoted value is not an attribute
    }
    return links;
}

std::string remove_dot_segments(std::string_view path) {
    // Section 5.2.4, step by step: move segments from `input` to `output`, dropping "." and letting
    // ".." remove the segment before it. The letters are the RFC's.
    std::string_view input = path;
    std::string output;
    const auto drop_last_segment = [&output] {
        const std::size_t slash = output.rfind('/');
        output.erase(slash == std::string::npos ? 0 : slash);
    };
    while (!input.empty()) {
        if (input.starts_with("../")) {  // A
            input.remove_prefix(3);
        } else if (input.starts_with("./")) {
            input.remove_prefix(2);
        } else if (input.starts_with("/./")) {  // B: "/./g" -> "/g"
            input.remove_prefix(2);
        } else if (input == "/.") {
            input = "/";
        } else if (input.starts_with("/../")) {  // C: "/../g" -> "/g", and one segment less
            input.remove_prefix(3);
            drop_last_segment();
        } else if (input == "/..") {
            input = "/";
            drop_last_segment();
        } else if (input == "." || input == "..") {  // D
            input = {};
        } else {  // E: move "/segment" (or the first "segment") to the output
            const std::size_t end = input.find('/', input.starts_with('/') ? 1 : 0);
            output += input.substr(0, end);
            input.remove_prefix(end == std::string_view::npos ? input.size() : end);
        }
    }
    return output;
}

std::string resolve_reference(std::string_view base_text, std::string_view reference_text) {
    const Parts base = split(base_text);
    const Parts reference = split(reference_text);

    // Section 5.2.2, "transform references" (the strict parser: a reference with a scheme is
    // absolute even when the scheme is the base's).
    std::optional<std::string_view> scheme = base.scheme;
    std::optional<std::string_view> authority = base.authority;
    std::string path;
    std::optional<std::string_view> query = reference.query;
    if (reference.scheme) {  // "http://other/x", "mailto:someone": absolute already
        scheme = reference.scheme;
        authority = reference.authority;
        path = remove_dot_segments(reference.path);
    } else if (reference.authority) {  // "//other/x": only the scheme comes from the base
        authority = reference.authority;
        path = remove_dot_segments(reference.path);
    } else if (reference.path.empty()) {  // "", "?page=2", "#top": this very page
        path = std::string(base.path);
        if (!reference.query) query = base.query;
    } else if (reference.path.starts_with('/')) {  // "/site/about"
        path = remove_dot_segments(reference.path);
    } else {  // "about", "./about", "../docs/"
        path = remove_dot_segments(merge(base, reference.path));
    }

    // Section 5.3: put the parts back together. Pages link to "/caf\xE9" and "/a b" (HTML's URL
    // parser accepts them), but they are no URLs: the path and query are percent-encoded, as a
    // browser does, so that the request line holds printable ASCII only.
    std::string result;
    if (scheme) result += std::string(*scheme) + ":";
    if (authority) {
        result += "//" + std::string(*authority);
    } else if (path.starts_with("//")) {
        // Without an authority a path cannot start with "//" (section 3.3): it would read as one,
        // and "http:/.//evil.example/x" would become a link to evil.example. remove_dot_segments
        // can make such a path; "/." in front keeps the path and what it means (the WHATWG URL
        // standard does the same).
        result += "/.";
    }
    result += percent_encode(path);
    if (query) result += "?" + percent_encode(*query);
    if (reference.fragment) result += "#" + std::string(*reference.fragment);
    return result;
}

std::string_view without_fragment(std::string_view url) { return url.substr(0, url.find('#')); }

std::optional<Url> parse_http_url(std::string_view absolute) {
    // parse_url names the problem for a person at the command line; for a link on a page, "not a
    // URL we can fetch" is all there is to know. It accepts only http:// (in any case), so https:,
    // mailto: and the rest end here.
    try {
        Url url = parse_url(absolute);
        for (char& c : url.host) c = to_lower(c);
        return url;
    } catch (const UrlError&) {
        return std::nullopt;
    }
}

}  // namespace sixways::crawler
