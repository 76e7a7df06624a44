// Parsing an http:// URL by hand.
//
// Only what a fetcher needs: the host to connect to, the port, and the request target to send. The
// parser is strict on purpose. Every byte of the host and target ends up in the request we write to
// the socket, so a CR or LF smuggled into a URL would let it add header lines of its own; a space
// would split the request line. Rejecting those here means build_get_request can copy the parts
// as they are, once the bytes a target may not hold are percent-encoded.
#include "common/url.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstdio>

namespace sixways {
namespace {

bool is_ascii_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool is_hex_digit(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

char to_lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

// 'x' for a printable character, 0xNN for anything else, for messages.
std::string describe(char c) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte > 0x20 && byte < 0x7f) return std::string{'\'', c, '\''};
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02X", byte);
    return hex;
}

// Spaces and control characters are never valid in a URL (RFC 3986 has no place for them; they
// must be percent-encoded), and CR/LF in particular would end the request line early.
void reject_spaces_and_control_characters(std::string_view text) {
    for (std::size_t i = 0; i < text.size(); ++i) {
        const auto byte = static_cast<unsigned char>(text[i]);
        if (byte == ' ') {
            throw UrlError("URL contains a space at position " + std::to_string(i) +
                           " (write it as %20)");
        }
        if (byte < 0x20 || byte == 0x7f) {
            throw UrlError("URL contains the control character " + describe(text[i]) +
                           " at position " + std::to_string(i));
        }
    }
}

// RFC 3986: scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ). Returns its length, 0 if none.
std::size_t scheme_length(std::string_view text) {
    if (text.empty() || !is_ascii_letter(text[0])) return 0;
    std::size_t n = 1;
    while (n < text.size() && (is_ascii_letter(text[n]) || is_digit(text[n]) || text[n] == '+' ||
                               text[n] == '-' || text[n] == '.')) {
        ++n;
    }
    return n;
}

std::uint16_t parse_port(std::string_view text) {
    if (text.empty()) throw UrlError("empty port after ':'");
    const auto bad = [&] {
        return UrlError("bad port \"" + std::string(text) + "\" (must be a number from 1 to 65535)");
    };
    unsigned value = 0;
    for (const char c : text) {
        if (!is_digit(c)) throw bad();
        value = value * 10 + static_cast<unsigned>(c - '0');
        if (value > 65535) throw bad();  // checked per digit, so a long string cannot overflow
    }
    if (value == 0) throw bad();
    return static_cast<std::uint16_t>(value);
}

// A host name or IPv4 literal: letters, digits, '-', '.' (and '_', which real names do contain).
// Anything else could not be resolved anyway, and "%" or non-ASCII bytes would only produce a
// confusing resolver error later. Internationalised names must be given in their ASCII form.
void check_host_name(std::string_view host) {
    for (const char c : host) {
        if (!is_ascii_letter(c) && !is_digit(c) && c != '-' && c != '.' && c != '_') {
            throw UrlError("bad character " + describe(c) + " in host \"" + std::string(host) + "\"");
        }
    }
}

void check_ipv6_literal(const std::string& host) {
    // inet_pton is the definitive judge of what is an IPv6 address. Zone IDs ("fe80::1%25eth0")
    // are not accepted: a fetcher on loopback never needs them.
    in6_addr address{};
    if (inet_pton(AF_INET6, host.c_str(), &address) != 1) {
        throw UrlError("bad IPv6 address \"[" + host + "]\"");
    }
}

// What a path or query may hold as it is (RFC 3986, section 3.3 and 3.4): the unreserved
// characters, the sub-delims, ':', '@', '/' and '?'. Everything else is percent-encoded.
bool allowed_in_target(char c) {
    if (is_ascii_letter(c) || is_digit(c)) return true;
    return std::string_view("-._~!$&'()*+,;=:@/?").find(c) != std::string_view::npos;
}

}  // namespace

// Section 2.1: each byte a path or query may not hold, as '%' and two hex digits. A '%' that
// already starts "%XX" is kept, so a URL that was encoded is not encoded twice.
std::string percent_encode(std::string_view text) {
    static constexpr char hex[] = "0123456789ABCDEF";
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        const bool already_encoded = c == '%' && i + 2 < text.size() && is_hex_digit(text[i + 1]) &&
                                     is_hex_digit(text[i + 2]);
        if (allowed_in_target(c) || already_encoded) {
            out += c;
        } else {
            const auto byte = static_cast<unsigned char>(c);
            out += '%';
            out += hex[byte >> 4];
            out += hex[byte & 0x0F];
        }
    }
    return out;
}

std::string Url::host_header() const {
    // An IPv6 literal is the only kind of host that contains ':', and it needs its brackets back
    // so that the port can be told apart from the address.
    std::string value = host.find(':') != std::string::npos ? "[" + host + "]" : host;
    if (port != 80) value += ":" + std::to_string(port);
    return value;
}

std::string Url::to_string() const { return "http://" + host_header() + target; }

Url parse_url(std::string_view text) {
    if (text.empty()) throw UrlError("empty URL");
    reject_spaces_and_control_characters(text);

    // The scheme, compared case-insensitively ("HTTP://" is the same URL).
    const std::size_t scheme_end = scheme_length(text);
    if (scheme_end == 0 || text.substr(scheme_end, 3) != "://") {
        throw UrlError("missing \"http://\" at the start of the URL");
    }
    std::string scheme;
    for (const char c : text.substr(0, scheme_end)) scheme += to_lower(c);
    if (scheme != "http") throw UrlError(scheme + ":// is not supported (only http://)");

    // The authority runs up to the first '/', '?' or '#'; the rest is the path, query and fragment.
    std::string_view rest = text.substr(scheme_end + 3);
    const std::size_t authority_end = rest.find_first_of("/?#");
    const std::string_view authority = rest.substr(0, authority_end);
    const std::string_view after_authority =
        authority_end == std::string_view::npos ? std::string_view{} : rest.substr(authority_end);

    if (authority.find('@') != std::string_view::npos) {
        throw UrlError("user info (user@host) is not supported in the URL");
    }

    Url url;
    std::string_view port_text;  // what follows the host's ':' (if there is one)
    bool has_port = false;
    if (!authority.empty() && authority.front() == '[') {
        // An IPv6 literal: "[::1]" or "[::1]:8080". Its colons are why it needs brackets.
        const std::size_t close = authority.find(']');
        if (close == std::string_view::npos) throw UrlError("unterminated IPv6 literal (missing ']')");
        url.host = std::string(authority.substr(1, close - 1));
        if (url.host.empty()) throw UrlError("missing host (empty IPv6 literal \"[]\")");
        check_ipv6_literal(url.host);
        const std::string_view after = authority.substr(close + 1);
        if (!after.empty()) {
            if (after.front() != ':') {
                throw UrlError("unexpected \"" + std::string(after) + "\" after the IPv6 literal");
            }
            has_port = true;
            port_text = after.substr(1);
        }
    } else {
        const std::size_t colon = authority.find(':');
        if (colon != std::string_view::npos &&
            authority.find(':', colon + 1) != std::string_view::npos) {
            throw UrlError("an IPv6 address must be written in brackets, e.g. http://[::1]:8080/");
        }
        url.host = std::string(authority.substr(0, colon));
        if (colon != std::string_view::npos) {
            has_port = true;
            port_text = authority.substr(colon + 1);
        }
        if (url.host.empty()) throw UrlError("missing host");
        check_host_name(url.host);
    }
    if (has_port) url.port = parse_port(port_text);

    // The target is the path and query. The fragment ("#section") is for the browser and is
    // never sent to the server. Bytes a request line may not carry ("caf\xC3\xA9", "a|b") are
    // sent percent-encoded, as a browser sends them; the report shows the URL as sent.
    const std::string target = percent_encode(after_authority.substr(0, after_authority.find('#')));
    if (target.empty()) {
        url.target = "/";
    } else if (target.front() == '?') {
        url.target = "/" + target;  // "http://host?q" asks for "/?q"
    } else {
        url.target = target;
    }
    return url;
}

}  // namespace sixways
