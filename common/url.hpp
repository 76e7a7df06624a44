// An http:// URL, split into the parts a fetcher needs: where to connect and what to ask for.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace sixways {

struct Url {
    std::string host;        // as written; an IPv6 literal without its brackets ("::1")
    std::uint16_t port = 80;
    std::string target = "/";  // path and query, always starting with '/'; the fragment is dropped

    // The Host header's value: "example.com", "example.com:8080", "[::1]:8080" (port omitted when 80).
    std::string host_header() const;
    // The normal form: "http://" + host_header() + target.
    std::string to_string() const;

    friend bool operator==(const Url&, const Url&) = default;
};

// Thrown by parse_url; what() says what is wrong, e.g. "https:// is not supported (only http://)".
class UrlError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Parses "http://host[:port][/path][?query][#fragment]". Host names, IPv4 literals and IPv6 literals
// in brackets are accepted. Rejected with a UrlError: other schemes, a missing host, a port that is
// not 1-65535, user info ("user@host"), and control characters or spaces anywhere (CR/LF would let a
// URL inject headers into the request). Bytes a target may not hold (a byte above 0x7F, '"', '|')
// are percent-encoded (see percent_encode below): the target is what the request line sends.
Url parse_url(std::string_view text);

// RFC 3986, section 2.1: `text` (a path or a query) with every byte it may not hold written as '%'
// and two hex digits. Kept as they are: the unreserved characters, the sub-delims, ':', '@', '/',
// '?', and a '%' that already starts "%XX", so that an encoded URL is not encoded twice.
//   percent_encode("/caf\xC3\xA9 menu") -> "/caf%C3%A9%20menu"
std::string percent_encode(std::string_view text);

}  // namespace sixways
