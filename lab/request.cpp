// Reading a request head (RFC 9112, sections 2 to 5), leniently about line endings and strictly
// about everything else.
#include "lab/request.hpp"

#include <algorithm>

namespace sixways::lab {
namespace {

// The characters of a token (a method, a header name): RFC 9110 section 5.6.2.
bool is_token_char(char c) {
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
    return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool is_token(std::string_view text) {
    return !text.empty() && std::all_of(text.begin(), text.end(), is_token_char);
}

// Printable ASCII without the space: what a request target may contain.
bool is_target_char(char c) { return c > 0x20 && c < 0x7f; }

bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool equals_ignoring_case(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const auto lower = [](char c) { return (c >= 'A' && c <= 'Z') ? char(c - 'A' + 'a') : c; };
        if (lower(a[i]) != lower(b[i])) return false;
    }
    return true;
}

// A line without its ending: lines end with CRLF, but a lone LF is accepted too (RFC 9112 2.2).
std::string_view without_cr(std::string_view line) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    return line;
}

std::string_view trim_whitespace(std::string_view text) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
    return text;
}

}  // namespace

RequestParser::Status RequestParser::fail(int status, std::string why) {
    status_ = Status::invalid;
    error_status_ = status;
    error_ = std::move(why);
    std::string().swap(buffer_);
    return status_;
}

RequestParser::Status RequestParser::feed(std::string_view bytes) {
    if (status_ != Status::need_more) return status_;
    // Keep at most one byte more than a head may have: enough to know it is too long.
    const std::size_t room = max_head_bytes + 1 - buffer_.size();
    buffer_.append(bytes.substr(0, room));

    // The request line is checked as soon as it is whole, so that garbage is answered at once
    // instead of after a blank line that may never come.
    const std::size_t first_line_end = buffer_.find('\n');
    if (!request_line_checked_ && first_line_end != std::string::npos) {
        request_line_checked_ = true;
        if (parse_request_line(without_cr(std::string_view(buffer_).substr(0, first_line_end))) ==
            Status::invalid) {
            return status_;
        }
    }

    // The head ends with an empty line: "\n\n" or "\n\r\n". Each feed searches only the bytes it
    // has not searched before (minus two, for an ending split across reads), so a client that
    // sends one byte at a time costs linear time, not quadratic.
    std::size_t head_end = 0;
    for (std::size_t i = scanned_; i < buffer_.size(); ++i) {
        if (buffer_[i] != '\n') continue;
        if (i + 1 < buffer_.size() && buffer_[i + 1] == '\n') {
            head_end = i + 2;
            break;
        }
        if (i + 2 < buffer_.size() && buffer_[i + 1] == '\r' && buffer_[i + 2] == '\n') {
            head_end = i + 3;
            break;
        }
    }
    if (head_end == 0) {
        if (buffer_.size() > max_head_bytes) {
            return fail(431, "request head longer than " + std::to_string(max_head_bytes) + " bytes");
        }
        scanned_ = std::max(scanned_, buffer_.size() < 2 ? std::size_t{0} : buffer_.size() - 2);
        return status_;
    }
    if (head_end > max_head_bytes) {
        return fail(431, "request head longer than " + std::to_string(max_head_bytes) + " bytes");
    }

    // The header lines lie between the request line and the empty line.
    std::string_view rest = std::string_view(buffer_).substr(0, head_end);
    rest.remove_prefix(first_line_end + 1);
    while (true) {
        const std::size_t line_end = rest.find('\n');
        const std::string_view line = without_cr(rest.substr(0, line_end));
        rest.remove_prefix(line_end + 1);
        if (line.empty()) break;
        if (parse_header_line(line) == Status::invalid) return status_;
    }
    // RFC 9112 section 3.2: a server must answer 400 to an HTTP/1.1 request without Host (the
    // header came with HTTP/1.1; an HTTP/1.0 request may lack it).
    if (http11_ && !seen_host_) return fail(400, "an HTTP/1.1 request must carry a Host header");
    if (!target_authority_.empty()) head_.host = target_authority_;
    status_ = Status::complete;
    std::string().swap(buffer_);  // the head is parsed; a connection keeps no more than it needs
    return status_;
}

// "GET /path HTTP/1.1": three parts separated by single spaces.
RequestParser::Status RequestParser::parse_request_line(std::string_view line) {
    const std::size_t first_space = line.find(' ');
    const std::size_t second_space =
        first_space == std::string_view::npos ? first_space : line.find(' ', first_space + 1);
    if (second_space == std::string_view::npos) {
        return fail(400, "the request line is not \"METHOD TARGET HTTP/1.1\"");
    }
    const std::string_view method = line.substr(0, first_space);
    const std::string_view target = line.substr(first_space + 1, second_space - first_space - 1);
    const std::string_view version = line.substr(second_space + 1);

    if (!is_token(method)) return fail(400, "the method is not a token");
    if (!std::all_of(target.begin(), target.end(), is_target_char)) {
        return fail(400, "the target contains a space or a control character");
    }
    // The absolute form, "http://host:port/path?query" (RFC 9112 section 3.2.2), is what a client
    // sends to a proxy, and a server must accept it too: the path is the target, and the authority
    // replaces the Host header.
    std::string_view path = target;
    constexpr std::string_view scheme = "http://";
    if (equals_ignoring_case(target.substr(0, scheme.size()), scheme)) {
        const std::string_view after_scheme = target.substr(scheme.size());
        const std::size_t authority_end = std::min(after_scheme.find('/'), after_scheme.find('?'));
        const std::string_view authority = after_scheme.substr(0, authority_end);
        if (authority.empty()) return fail(400, "the target's URL has no host");
        target_authority_ = std::string(authority);
        path = authority_end == std::string_view::npos ? "" : after_scheme.substr(authority_end);
    } else if (target.empty() || target.front() != '/') {
        return fail(400, "the target must be a path starting with '/' or an http:// URL");
    }
    if (version != "HTTP/1.1" && version != "HTTP/1.0") {
        const bool well_formed = version.size() == 8 && version.substr(0, 5) == "HTTP/" &&
                                 is_digit(version[5]) && version[6] == '.' && is_digit(version[7]);
        if (well_formed) return fail(505, "only HTTP/1.0 and HTTP/1.1 are supported");
        return fail(400, "the request line does not end with an HTTP version");
    }
    http11_ = version == "HTTP/1.1";
    head_.method = std::string(method);
    // "http://h" and "http://h?q" name the path "/" (RFC 9112 section 3.2.1).
    head_.target = path.starts_with('/') ? std::string(path) : "/" + std::string(path);
    if (method != "GET" && method != "HEAD") return fail(405, "only GET and HEAD are supported");
    return status_;
}

// "Name: value". Obsolete line folding (a line starting with a space) is rejected, as RFC 9112
// section 5.2 allows, and so are control characters, which could split one header into two.
RequestParser::Status RequestParser::parse_header_line(std::string_view line) {
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos || !is_token(line.substr(0, colon))) {
        return fail(400, "a header line is not \"Name: value\"");
    }
    const std::string_view name = line.substr(0, colon);
    const std::string_view value = trim_whitespace(line.substr(colon + 1));
    const bool has_control = std::any_of(value.begin(), value.end(), [](char c) {
        return (static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f;
    });
    if (has_control) return fail(400, "a header value contains a control character");
    if (equals_ignoring_case(name, "host")) {
        if (seen_host_) return fail(400, "more than one Host header");
        seen_host_ = true;
        head_.host = std::string(value);
    }
    return status_;
}

}  // namespace sixways::lab
