// HTTP/1.x on the client side: the request we send, and an incremental parser for the response.
//
// The parser is a state machine driven by whatever bytes recv() returned. It never looks back at
// bytes it has already handled, and it never waits for "the whole response" in a buffer:
//   - the head is read one line at a time; only the current, unfinished line is kept between
//     calls, so feeding a 64 KiB head one byte at a time costs the same as feeding it at once
//     (and a line that arrives whole is read where it is, without a copy);
//   - body bytes are appended as whole spans, never byte by byte.
// Every decision depends only on the bytes and their positions, never on where one recv() ended
// and the next began. That is what makes the result the same for every split, which the tests
// check by feeding each sample response at every split point.
//
// Rules follow RFC 9112 (HTTP/1.1 message syntax); the places where we are stricter or more
// lenient than it allows say so.
#include "common/http.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <limits>
#include <optional>

namespace sixways {
namespace {

// Error messages quote at most this many bytes of the offending line.
constexpr std::size_t quote_limit = 40;

char to_lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool equals_ignoring_case(std::string_view a, std::string_view b) {
    return a.size() == b.size() &&
           std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return to_lower(x) == to_lower(y); });
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_whitespace(char c) { return c == ' ' || c == '\t'; }  // "OWS" in the RFC

// Control characters other than HTAB: never valid in a header line (RFC 9110 5.5).
bool is_control(char c) {
    const auto byte = static_cast<unsigned char>(c);
    return (byte < 0x20 && byte != '\t') || byte == 0x7f;
}

// The characters of a header name ("token" in RFC 9110 5.6.2), as a table: every byte of every
// header name is checked, and a lookup is the cheapest check there is.
constexpr std::array<bool, 256> token_chars = [] {
    std::array<bool, 256> table{};
    for (const char c : std::string_view("0123456789abcdefghijklmnopqrstuvwxyz"
                                         "ABCDEFGHIJKLMNOPQRSTUVWXYZ!#$%&'*+-.^_`|~")) {
        table[static_cast<unsigned char>(c)] = true;
    }
    return table;
}();

bool is_token_char(char c) { return token_chars[static_cast<unsigned char>(c)]; }

std::string_view trim(std::string_view text) {
    while (!text.empty() && is_whitespace(text.front())) text.remove_prefix(1);
    while (!text.empty() && is_whitespace(text.back())) text.remove_suffix(1);
    return text;
}

// The text in double quotes for an error message: at most quote_limit bytes, then "...", with
// quotes, backslashes and unprintable bytes escaped so that a hostile server cannot write
// control characters into our terminal or logs.
std::string quoted(std::string_view text) {
    std::string out = "\"";
    for (const char c : text.substr(0, quote_limit)) {
        const auto byte = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (c == '\r') {
            out += "\\r";
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\t') {
            out += "\\t";
        } else if (byte < 0x20 || byte >= 0x7f) {
            char hex[8];
            std::snprintf(hex, sizeof hex, "\\x%02x", byte);
            out += hex;
        } else {
            out += c;
        }
    }
    out += "\"";
    if (text.size() > quote_limit) out += "...";
    return out;
}

// A line without its ending: "\r\n" or a bare "\n" (RFC 9112 2.2 allows a recipient to accept
// the bare LF, and some servers send it).
std::string_view without_line_end(std::string_view line) {
    line.remove_suffix(1);  // the '\n'
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    return line;
}

// A header or trailer line, split: both parts point into the line.
struct FieldLine {
    std::string_view name;
    std::string_view value;
};

// Splits "name: value" and checks it; returns the error message, or "" when it is well formed.
// `kind` is "header" or "trailer", for the message. A line that starts with whitespace is not
// one: it continues the field line before it (see on_folded_line). Nothing is copied here: the caller copies the
// fields it keeps, so a parser that keeps no headers reads a head without allocating.
std::string parse_field_line(std::string_view line, std::string_view kind, FieldLine& field) {
    const auto bad = [&](const char* why) {
        return "bad " + std::string(kind) + " line (" + why + "): " + quoted(line);
    };
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) return bad("no colon");
    const std::string_view name = line.substr(0, colon);
    if (name.empty()) return bad("empty name");
    // "Name : value" is rejected, not trimmed: it has been used to smuggle headers past proxies
    // that read it differently (RFC 9112 5.1).
    if (is_whitespace(name.back())) return bad("whitespace before the colon");
    if (!std::all_of(name.begin(), name.end(), is_token_char)) {
        return bad("bad character in the name");
    }
    const std::string_view value = trim(line.substr(colon + 1));
    if (std::any_of(value.begin(), value.end(), is_control)) {
        return bad("control character in the value");
    }
    field = FieldLine{name, value};
    return "";
}

// 1*DIGIT as an unsigned 64-bit number; nullopt when it is not digits or does not fit.
std::optional<std::uint64_t> parse_decimal(std::string_view text) {
    if (text.empty()) return std::nullopt;
    std::uint64_t value = 0;
    for (const char c : text) {
        if (!is_digit(c)) return std::nullopt;
        const auto digit = static_cast<std::uint64_t>(c - '0');
        if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) return std::nullopt;
        value = value * 10 + digit;
    }
    return value;
}

int hex_value(char c) {
    if (is_digit(c)) return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// Calls `visit` with each trimmed, non-empty element of a comma-separated list ("a, b,,c").
template <typename Visit>
void for_each_list_element(std::string_view list, Visit visit) {
    while (true) {
        const std::size_t comma = list.find(',');
        const std::string_view element = trim(list.substr(0, comma));
        if (!element.empty()) visit(element);
        if (comma == std::string_view::npos) return;
        list.remove_prefix(comma + 1);
    }
}

}  // namespace

const std::string* Response::header(std::string_view name) const {
    for (const Header& field : headers) {
        if (equals_ignoring_case(field.name, name)) return &field.value;
    }
    return nullptr;
}

// The url's parts are copied as they are: parse_url has already rejected spaces, CR and LF, which
// could otherwise break the request line or inject header lines.
std::string build_get_request(const Url& url) {
    const std::string host = url.host_header();
    std::string request;
    request.reserve(100 + url.target.size() + host.size());  // one allocation, not one per line
    request.append("GET ").append(url.target).append(" HTTP/1.1\r\n");
    request.append("Host: ").append(host).append("\r\n");
    request += "User-Agent: six-ways-to-fetch\r\n";
    request += "Accept: */*\r\n";
    // One request per connection: the server closes after answering, and a body without any
    // framing ends at that close.
    request += "Connection: close\r\n";
    request += "\r\n";
    return request;
}

ResponseParser::ResponseParser(std::size_t body_cap, bool keep_headers)
    : body_cap_(body_cap), keep_headers_(keep_headers) {}

bool ResponseParser::headers_done() const { return headers_done_; }

ResponseParser::Status ResponseParser::feed(std::string_view bytes) {
    if (status_ != Status::need_more) return status_;
    if (!bytes.empty()) received_any_ = true;

    // Each turn of the loop handles one line or one span of body bytes, and returns or moves on
    // when the bytes run out, the response ends, or something is wrong.
    while (!bytes.empty() && status_ == Status::need_more) {
        switch (part_) {
        case Part::status_line:
        case Part::header_line: {
            // The whole head, all lines together (and any skipped 1xx heads before it), is
            // bounded: a server that never ends its headers must not make us buffer forever.
            std::string_view line;
            const Line got = collect_line(bytes, max_header_bytes - section_bytes_, line);
            // A status line that does not start with "HTTP/1." is refused as soon as enough of it
            // has arrived to quote in the message, rather than after 64 KiB of whatever a server
            // that is not speaking HTTP sends. (quote_limit + 2 bytes: the line's text is then
            // longer than the quote even if the last byte is a CR.) This comes before the size
            // check: past 64 KiB in one feed must give the same error as past 64 KiB in pieces.
            if (got != Line::complete && part_ == Part::status_line && line_.size() >= quote_limit + 2 &&
                !line_.starts_with("HTTP/1.")) {
                return fail("bad status line: " + quoted(line_));
            }
            if (got == Line::too_long) return fail("response headers larger than 64 KiB");
            if (got == Line::incomplete) break;
            section_bytes_ += line.size();
            const std::string_view text = without_line_end(line);
            if (part_ == Part::status_line) {
                on_status_line(text);
            } else if (text.empty()) {
                on_end_of_head();
            } else {
                on_header_line(text);
            }
            line_.clear();
            break;
        }
        case Part::body_length:
        case Part::chunk_data: {
            const auto count = static_cast<std::size_t>(std::min<std::uint64_t>(remaining_, bytes.size()));
            append_body(bytes.substr(0, count));
            bytes.remove_prefix(count);
            remaining_ -= count;
            if (remaining_ == 0) {
                if (part_ == Part::body_length) return complete();
                part_ = Part::chunk_data_end;
            }
            break;
        }
        case Part::body_until_close:
            append_body(bytes);
            bytes = {};
            break;
        case Part::chunk_size: {
            std::string_view line;
            const Line got = collect_line(bytes, max_chunk_line_bytes, line);
            if (got == Line::too_long) return fail("chunk size line longer than 4096 bytes");
            if (got == Line::incomplete) break;
            on_chunk_size_line(without_line_end(line));
            line_.clear();
            break;
        }
        case Part::chunk_data_end: {
            // The chunk's data is followed by a line ending and nothing else.
            std::string_view line;
            const Line got = collect_line(bytes, 2, line);
            if (line != "\r" && line != "\r\n" && line != "\n") {
                return fail("missing CRLF after chunk data");
            }
            if (got == Line::complete) {
                line_.clear();
                part_ = Part::chunk_size;
            }
            break;
        }
        case Part::trailer: {
            std::string_view line;
            const Line got = collect_line(bytes, max_header_bytes - section_bytes_, line);
            if (got == Line::too_long) return fail("chunked trailer larger than 64 KiB");
            if (got == Line::incomplete) break;
            section_bytes_ += line.size();
            on_trailer_line(without_line_end(line));
            line_.clear();
            break;
        }
        case Part::done:
            break;  // unreachable: status_ is no longer need_more
        }
    }
    return status_;
}

ResponseParser::Status ResponseParser::finish() {
    if (status_ != Status::need_more) return status_;
    switch (part_) {
    case Part::body_until_close:
        return complete();  // the close is this body's framing
    case Part::status_line:
        if (!received_any_) return fail("connection closed before any response byte");
        if (after_interim_ && line_.empty()) {
            return fail("connection closed after a 1xx interim response, before the final response");
        }
        return fail("connection closed in the middle of the headers");
    case Part::header_line:
        return fail("connection closed in the middle of the headers");
    case Part::body_length:
        return fail("connection closed after " + std::to_string(content_length_ - remaining_) + " of " +
                    std::to_string(content_length_) + " body bytes");
    case Part::chunk_size:
    case Part::chunk_data:
    case Part::chunk_data_end:
    case Part::trailer:
        return fail("connection closed in the middle of a chunked body");
    case Part::done:
        break;  // unreachable: status_ is no longer need_more
    }
    return status_;
}

// Takes the bytes up to and including the next '\n' off the front of `bytes`, and sets `line` to
// the line so far. A line that is all there (the usual case: a head is small) is left where it is,
// and `line` points into `bytes`; otherwise the bytes are moved into line_, which gathers the line
// across calls, and `line` points to line_. Either way the caller clears line_ once it has handled
// a complete line. A line longer than max_bytes (ending included) is too_long; at most
// max_bytes + 1 bytes are copied to find that out.
ResponseParser::Line ResponseParser::collect_line(std::string_view& bytes, std::size_t max_bytes,
                                                  std::string_view& line) {
    const std::size_t newline = bytes.find('\n');
    if (line_.empty() && newline != std::string_view::npos && newline < max_bytes) {
        line = bytes.substr(0, newline + 1);
        bytes.remove_prefix(newline + 1);
        return Line::complete;
    }
    const std::size_t wanted = newline == std::string_view::npos ? bytes.size() : newline + 1;
    const std::size_t room = max_bytes + 1 - std::min(max_bytes + 1, line_.size());
    const std::size_t count = std::min(wanted, room);
    line_.append(bytes.data(), count);
    bytes.remove_prefix(count);
    line = line_;
    if (line_.size() > max_bytes) return Line::too_long;
    return line_.back() == '\n' ? Line::complete : Line::incomplete;
}

// "HTTP/1.1 200 OK": HTTP-version SP 3DIGIT SP [reason]. The reason may be empty, and a server
// that leaves out the space before an empty reason ("HTTP/1.1 200") is accepted too.
ResponseParser::Status ResponseParser::on_status_line(std::string_view line) {
    const auto bad = [&] { return fail("bad status line: " + quoted(line)); };
    if (line.size() < 12 || !line.starts_with("HTTP/1.") || !is_digit(line[7]) || line[8] != ' ' ||
        !is_digit(line[9]) || !is_digit(line[10]) || !is_digit(line[11])) {
        return bad();
    }
    if (line.size() > 12 && line[12] != ' ') return bad();
    const std::string_view reason = line.size() > 13 ? line.substr(13) : std::string_view{};
    if (std::any_of(reason.begin(), reason.end(), is_control)) return bad();
    const int code = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
    if (code < 100 || code > 599) return bad();  // RFC 9110 15: the only valid range
    if (code == 101) {
        // Switching Protocols answers an Upgrade request; we never send one, so a server that
        // switches anyway is not speaking HTTP to us any more.
        return fail("unexpected 101 Switching Protocols (the request did not ask to upgrade)");
    }
    response_.status = code;
    response_.reason = std::string(reason);
    part_ = Part::header_line;
    may_fold_ = false;  // a new head (the final one after a 1xx) starts without a field to continue
    return status_;
}

ResponseParser::Status ResponseParser::on_header_line(std::string_view line) {
    if (is_whitespace(line.front())) return on_folded_line(line, "header");
    FieldLine field;
    if (std::string message = parse_field_line(line, "header", field); !message.empty()) {
        return fail(std::move(message));
    }
    // Headers not kept are still read up to the end of the head, for the two that frame the body.
    fold_into_last_header_ = keep_headers_ || equals_ignoring_case(field.name, "Content-Length") ||
                             equals_ignoring_case(field.name, "Transfer-Encoding");
    may_fold_ = true;
    if (!fold_into_last_header_) return status_;
    response_.headers.push_back(Header{std::string(field.name), std::string(field.value)});
    return status_;
}

// Obsolete line folding (RFC 9112 5.2): a field line that starts with a space or a tab continues
// the field line before it, as old servers wrote long values:
//   X-Long: first part
//     second part                 -> X-Long: first part second part
// A user agent must replace each fold with a space and go on, so that is what we do. Every line
// reaches here whole, so the result is the same however the bytes were split. Folding before the
// first field line has nothing to continue: that is an error.
ResponseParser::Status ResponseParser::on_folded_line(std::string_view line, std::string_view kind) {
    if (!may_fold_) return fail("line folding before the first " + std::string(kind) + ": " + quoted(line));
    const std::string_view more = trim(line);
    if (std::any_of(more.begin(), more.end(), is_control)) {
        return fail("bad " + std::string(kind) + " line (control character in the value): " + quoted(line));
    }
    if (!fold_into_last_header_ || more.empty()) return status_;  // a field not kept, or a blank fold
    std::string& value = response_.headers.back().value;
    if (!value.empty()) value += ' ';
    value += more;
    return status_;
}

// The empty line after the headers: decide how the body is framed (RFC 9112 6.3).
ResponseParser::Status ResponseParser::on_end_of_head() {
    const int code = response_.status;
    if (code < 200) {
        // An interim response (100 Continue, 102 Processing, 103 Early Hints): it has no body and
        // the final response follows on the same connection. Forget it, headers included. Its
        // bytes stay counted in section_bytes_, so an endless stream of 1xx heads still hits the
        // 64 KiB bound.
        response_ = Response{};
        after_interim_ = true;
        part_ = Part::status_line;
        return status_;
    }
    headers_done_ = true;
    const Status status = choose_framing();
    if (!keep_headers_) std::vector<Header>().swap(response_.headers);  // the framing has read them
    return status;
}

// The framing of a final response's body, from its status and headers.
ResponseParser::Status ResponseParser::choose_framing() {
    const int code = response_.status;
    // 204 No Content and 304 Not Modified never have a body, whatever their headers say.
    if (code == 204 || code == 304) return complete();

    // Transfer-Encoding wins over Content-Length (a response with both is suspect, but this is the
    // reading RFC 9112 prescribes). Chunked must be the last coding; any codings before it
    // ("gzip, chunked") stay applied to the body we keep: we do not decompress.
    std::string codings;
    for (const Header& field : response_.headers) {
        if (!equals_ignoring_case(field.name, "Transfer-Encoding")) continue;
        if (!codings.empty()) codings += ", ";
        codings += field.value;
    }
    if (!codings.empty()) {
        int chunked_count = 0;
        std::string_view last;
        for_each_list_element(codings, [&](std::string_view coding) {
            if (equals_ignoring_case(coding, "chunked")) ++chunked_count;
            last = coding;
        });
        const bool chunked_last = equals_ignoring_case(last, "chunked");
        if (chunked_count > 1 || (chunked_count == 1 && !chunked_last)) {
            return fail("bad Transfer-Encoding: " + quoted(codings));
        }
        if (chunked_last) {
            part_ = Part::chunk_size;
            return status_;
        }
        // Codings without chunked ("gzip"): only the close can tell where the body ends.
        part_ = Part::body_until_close;
        return status_;
    }

    // Content-Length: several fields, or a list, are fine if every value is the same
    // ("Content-Length: 42, 42" comes from proxies that merge fields); different values mean we
    // cannot know where the body ends, which is an error, not a guess.
    std::optional<std::uint64_t> length;
    for (const Header& field : response_.headers) {
        if (!equals_ignoring_case(field.name, "Content-Length")) continue;
        std::string message;
        bool empty = true;
        for_each_list_element(field.value, [&](std::string_view element) {
            empty = false;
            if (!message.empty()) return;
            if (!std::all_of(element.begin(), element.end(), is_digit)) {
                message = "bad Content-Length: " + quoted(field.value);
                return;
            }
            const std::optional<std::uint64_t> value = parse_decimal(element);
            if (!value) {
                message = "Content-Length too large: " + quoted(field.value);
            } else if (length && *length != *value) {
                message = "conflicting Content-Length values: " + std::to_string(*length) + " and " +
                          std::to_string(*value);
            } else {
                length = value;
            }
        });
        if (empty) message = "bad Content-Length: " + quoted(field.value);
        if (!message.empty()) return fail(std::move(message));
    }
    if (length) {
        content_length_ = remaining_ = *length;
        if (remaining_ == 0) return complete();
        part_ = Part::body_length;
        return status_;
    }

    // No framing at all: the body is everything until the server closes the connection.
    part_ = Part::body_until_close;
    return status_;
}

// "1a2b" or "1a2b;name=value": the size in hex, then extensions, which we ignore (nobody defines
// any that matter to a client). RFC 9112 7.1.1 allows whitespace before the ';'.
ResponseParser::Status ResponseParser::on_chunk_size_line(std::string_view line) {
    std::uint64_t size = 0;
    std::size_t digits = 0;
    for (; digits < line.size() && hex_value(line[digits]) >= 0; ++digits) {
        if (size > (std::numeric_limits<std::uint64_t>::max() >> 4)) {
            return fail("chunk size too large: " + quoted(line));
        }
        size = size * 16 + static_cast<std::uint64_t>(hex_value(line[digits]));
    }
    std::string_view rest = line.substr(digits);
    while (!rest.empty() && is_whitespace(rest.front())) rest.remove_prefix(1);
    if (digits == 0 || (!rest.empty() && rest.front() != ';')) {
        return fail("bad chunk size line: " + quoted(line));
    }
    if (size == 0) {
        // The last chunk; the trailer section follows, ended by an empty line.
        part_ = Part::trailer;
        section_bytes_ = 0;
        may_fold_ = false;
        fold_into_last_header_ = false;  // trailer fields are never kept
        return status_;
    }
    remaining_ = size;
    part_ = Part::chunk_data;
    return status_;
}

// Trailer fields are checked like header fields and then discarded: they arrive after the body,
// and no stage has a use for them. Mixing them into Response::headers would make a header seem to
// have been there from the start.
ResponseParser::Status ResponseParser::on_trailer_line(std::string_view line) {
    if (line.empty()) return complete();
    if (is_whitespace(line.front())) return on_folded_line(line, "trailer");
    FieldLine field;
    if (std::string message = parse_field_line(line, "trailer", field); !message.empty()) {
        return fail(std::move(message));
    }
    may_fold_ = true;
    return status_;
}

void ResponseParser::append_body(std::string_view bytes) {
    const std::size_t room = body_cap_ - std::min(body_cap_, response_.body.size());
    response_.body.append(bytes.data(), std::min(room, bytes.size()));
    response_.body_bytes += bytes.size();
}

ResponseParser::Status ResponseParser::complete() {
    part_ = Part::done;
    status_ = Status::complete;
    return status_;
}

ResponseParser::Status ResponseParser::fail(std::string message) {
    part_ = Part::done;
    status_ = Status::error;
    error_ = std::move(message);
    return status_;
}

}  // namespace sixways
