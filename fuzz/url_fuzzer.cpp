// Fuzz target: parse_url (common/url.hpp) never crashes, and a URL it accepts can be used as it is.
//
// Every stage sends what parse_url returns straight to the socket: build_get_request copies the
// host and target into the request without looking at them again. So an accepted URL must be
// well formed: a host, a port from 1 to 65535, a target that starts with '/' and holds no
// fragment, and no byte that could end a line or split the request line. Its normal form
// (to_string) must read back as the same URL. And the request built from it must be one the lab
// server (lab/request.hpp) reads back with the same target and Host header: parse_url
// percent-encodes every byte a target may not hold, so the target is printable ASCII.
//
// Input: the URL, the whole input. parse_url may refuse it with a UrlError, and nothing else: any
// other exception escapes, and libFuzzer reports it as a crash.
#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/http.hpp"
#include "common/url.hpp"
#include "fuzz/fuzz_input.hpp"
#include "lab/request.hpp"

namespace {

using sixways::fuzz::check;

bool is_space_or_control(char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte <= 0x20 || byte == 0x7f;
}

bool is_printable_ascii(char c) { return c > 0x20 && c < 0x7f; }

bool is_ipv6_literal(const std::string& host) {
    in6_addr address{};
    return inet_pton(AF_INET6, host.c_str(), &address) == 1;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    sixways::Url url;
    try {
        url = sixways::parse_url(text);
    } catch (const sixways::UrlError&) {
        return 0;
    }

    check(!url.host.empty(), "an accepted URL has a host");
    check(url.port != 0, "its port is from 1 to 65535");
    check(url.target.starts_with('/'), "its target starts with '/'");
    check(url.target.find('#') == std::string::npos, "its fragment is dropped");
    check(std::none_of(url.host.begin(), url.host.end(), is_space_or_control) &&
              std::none_of(url.target.begin(), url.target.end(), is_space_or_control),
          "no space or control character gets into the request");
    // A ':' in the host would read as a port in the Host header, unless it is put back in brackets,
    // which host_header() does for IPv6 literals, and only for them.
    check(url.host.find(':') == std::string::npos || is_ipv6_literal(url.host),
          "a host with ':' is an IPv6 literal");

    const std::string normal = url.to_string();
    check(sixways::parse_url(normal) == url, "the normal form reads back as the same URL");
    check(sixways::parse_url(normal).to_string() == normal, "the normal form is its own normal form");

    check(std::all_of(url.target.begin(), url.target.end(), is_printable_ascii),
          "its target is printable ASCII");
    sixways::lab::RequestParser server;
    check(server.feed(sixways::build_get_request(url)) == sixways::lab::RequestParser::Status::complete,
          "the lab server reads the request built from the URL");
    check(server.head().method == "GET" && server.head().target == url.target &&
              server.head().host == url.host_header(),
          "the lab server reads the same target and Host");
    return 0;
}
