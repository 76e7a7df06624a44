// Every path the lab server knows, and the bytes it answers with.
//
// Every response carries X-Request-Id (the request's number since the server started) and a
// Content-Type, and every body starts by echoing the target, "path=/x id=7\n", so a client that
// credits a response to the wrong request can be caught. The delay applies to plain paths only;
// every other family answers at once (or after its own time: /delay/MS, the slow pages of /site/,
// the pace of /fault/trickle).
#include "lab/responses.hpp"

#include <array>
#include <charconv>
#include <cstring>

#include "lab/site.hpp"

namespace sixways::lab {
namespace {

// ---- The filler text ----

constexpr std::string_view filler_line =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.\n";
static_assert(filler_line.size() == 64);

// 64 KiB of filler lines plus one more line, so that a slice of up to 64 KiB can start anywhere
// within a line.
constexpr std::size_t filler_block_bytes = 64 * 1024;

const std::string& filler_block() {
    static const std::string block = [] {
        std::string text;
        text.reserve(filler_block_bytes + filler_line.size());
        while (text.size() < filler_block_bytes + filler_line.size()) text += filler_line;
        return text;
    }();
    return block;
}

// ---- Building responses ----

constexpr std::uint64_t max_body_bytes = std::uint64_t{1} << 30;  // /bytes/N and /chunked/N
constexpr std::uint64_t max_delay_ms = 10 * 60 * 1000;            // /delay/MS
constexpr std::uint64_t max_redirects = 1000;                     // /redirect/K

const char* reason_phrase(int status) {
    switch (status) {
        case 100: return "Continue";
        case 101: return "Switching Protocols";
        case 103: return "Early Hints";
        case 200: return "OK";
        case 201: return "Created";
        case 202: return "Accepted";
        case 204: return "No Content";
        case 206: return "Partial Content";
        case 301: return "Moved Permanently";
        case 302: return "Found";
        case 303: return "See Other";
        case 304: return "Not Modified";
        case 307: return "Temporary Redirect";
        case 308: return "Permanent Redirect";
        case 400: return "Bad Request";
        case 401: return "Unauthorized";
        case 403: return "Forbidden";
        case 404: return "Not Found";
        case 405: return "Method Not Allowed";
        case 408: return "Request Timeout";
        case 418: return "I'm a teapot";
        case 429: return "Too Many Requests";
        case 431: return "Request Header Fields Too Large";
        case 500: return "Internal Server Error";
        case 502: return "Bad Gateway";
        case 503: return "Service Unavailable";
        case 504: return "Gateway Timeout";
        case 505: return "HTTP Version Not Supported";
        default: return "Other";
    }
}

// "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Request-Id: 7\r\n": the start of every head.
std::string head_start(int status, std::uint64_t id, std::string_view content_type) {
    std::string head = "HTTP/1.1 " + std::to_string(status) + " " + reason_phrase(status) + "\r\n";
    head += "Content-Type: ";
    head += content_type;
    head += "\r\nX-Request-Id: " + std::to_string(id) + "\r\n";
    return head;
}

std::string echo_line(std::string_view target, std::uint64_t id) {
    return "path=" + std::string(target) + " id=" + std::to_string(id) + "\n";
}

// A complete response with a Content-Length body: `body`, then `filler` bytes of filler text. A
// HEAD request gets the same head without the body.
Answer respond(int status, std::uint64_t id, bool head_only, std::string_view content_type,
               std::string_view extra_headers, std::string body, std::uint64_t filler = 0) {
    Answer answer;
    std::string& text = answer.output.text;
    text = head_start(status, id, content_type);
    text += extra_headers;
    text += "Content-Length: " + std::to_string(body.size() + filler) + "\r\n";
    text += "Connection: close\r\n\r\n";
    if (!head_only) {
        text += body;
        answer.output.filler_left = filler;
    }
    return answer;
}

// The body of /bytes/N (and of /chunked/N and plain paths): the echo line, then filler text, cut
// at exactly n bytes. Returns the echo part; the rest is `filler` bytes of filler text.
std::string echo_then_filler(std::string_view target, std::uint64_t id, std::uint64_t n,
                             std::uint64_t& filler) {
    std::string echo = echo_line(target, id);
    if (echo.size() > n) echo.resize(n);
    filler = n - echo.size();
    return echo;
}

Answer plain_text(int status, std::uint64_t id, bool head_only, std::string_view target,
                  std::string_view note, std::string_view extra_headers = {}) {
    return respond(status, id, head_only, "text/plain; charset=utf-8", extra_headers,
                   echo_line(target, id) + std::string(note));
}

// A plain path's body: the echo line, padded with filler text to 100 bytes, so that 1000 requests
// to "/" make 100,000 body bytes.
constexpr std::uint64_t plain_body_bytes = 100;

Answer plain_path(std::uint64_t id, bool head_only, std::string_view target, Duration wait) {
    const std::string echo = echo_line(target, id);
    const std::uint64_t padding = echo.size() < plain_body_bytes ? plain_body_bytes - echo.size() : 0;
    Answer answer = respond(200, id, head_only, "text/plain; charset=utf-8", {}, echo, padding);
    answer.wait = wait;
    return answer;
}

// "123" -> 123 when it is all digits and at most `max`; false otherwise ("", "-1", "1e3", "0x10").
bool parse_number(std::string_view text, std::uint64_t max, std::uint64_t& value) {
    if (text.empty() || text.size() > 19) return false;
    for (char c : text) {
        if (c < '0' || c > '9') return false;
    }
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    return error == std::errc() && end == text.data() + text.size() && value <= max;
}

Answer bad_argument(std::uint64_t id, bool head_only, std::string_view target, std::string_view why) {
    return plain_text(400, id, head_only, target, "bad request: " + std::string(why) + "\n");
}

// ---- /chunked/N ----

std::string hex(std::uint64_t n) {
    char digits[16];
    const auto end = std::to_chars(digits, digits + sizeof digits, n, 16).ptr;
    return std::string(digits, end);
}

constexpr std::uint64_t chunk_bytes = 16 * 1024;

// The head, then the first chunk, which carries the echo line; Output::refill() frames the filler
// into the following chunks as the connection drains. Every chunk has an extension, the last chunk
// one with a quoted value, and a trailer field follows it: a client must skip all three.
Answer chunked_body(std::uint64_t id, bool head_only, std::string_view target, std::uint64_t n) {
    Answer answer;
    Output& output = answer.output;
    output.text = head_start(200, id, "text/plain; charset=utf-8");
    output.text += "Transfer-Encoding: chunked\r\nTrailer: X-Body-Bytes\r\nConnection: close\r\n\r\n";
    if (head_only) return answer;

    std::uint64_t filler = 0;
    const std::string echo = echo_then_filler(target, id, n, filler);
    output.chunking = Output::Chunking::in_body;
    output.body_bytes = n;
    output.unchunked = filler;
    if (!echo.empty()) {
        output.text += hex(echo.size()) + ";part=echo\r\n" + echo;
        output.chunks = 1;
    }
    return answer;
}

// ---- /fault/NAME ----

// The first 100 bytes of a body that claims to be 1000: what reset, stall and short-body send.
Answer head_and_part_of_body(std::uint64_t id, std::string_view target, Ending ending) {
    Answer answer;
    std::uint64_t filler = 0;
    const std::string echo = echo_then_filler(target, id, 100, filler);
    answer.output.text = head_start(200, id, "text/plain; charset=utf-8") +
                         "Content-Length: 1000\r\nConnection: close\r\n\r\n" + echo;
    answer.output.filler_left = filler;
    answer.ending = ending;
    return answer;
}

Answer fault(std::string_view name, std::uint64_t id, bool head_only, std::string_view target) {
    Answer answer;
    std::string& text = answer.output.text;
    if (name == "reset") return head_and_part_of_body(id, target, Ending::reset);
    if (name == "stall") return head_and_part_of_body(id, target, Ending::keep_open);
    if (name == "short-body") return head_and_part_of_body(id, target, Ending::close);
    if (name == "close") return answer;  // no bytes at all, then close
    if (name == "hang") {
        answer.ending = Ending::keep_open;  // no bytes at all, and no close either
        return answer;
    }
    if (name == "partial-headers") {
        text = "HTTP/1.1 200 OK\r\nX-Request-Id: " + std::to_string(id) + "\r\nContent-Type: text/pl";
        return answer;
    }
    if (name == "trickle") {
        answer = plain_text(200, id, false, target, "");
        answer.trickle = true;
        return answer;
    }
    if (name == "bad-status") {
        answer = plain_text(200, id, false, target, "");
        text.replace(0, text.find("\r\n"), "HTTP/1.1 abc Invalid Status");
        return answer;
    }
    if (name == "big-headers") {
        // 80 KiB of headers, more than any client should accept (common/http.hpp stops at 64 KiB).
        std::string filler_headers;
        for (int i = 0; filler_headers.size() < 80 * 1024; ++i) {
            filler_headers += "X-Filler-" + std::to_string(i) + ": ";
            filler_headers += filler_line.substr(0, 60);
            filler_headers += "\r\n";
        }
        return plain_text(200, id, false, target, "", filler_headers);
    }
    if (name == "bad-chunk") {
        text = head_start(200, id, "text/plain; charset=utf-8") +
               "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n" +
               "zz;this is not a chunk size\r\n" + echo_line(target, id) + "\r\n0\r\n\r\n";
        return answer;
    }
    if (name == "folded-header") {
        // Obsolete line folding (RFC 9112 5.2): header values continued on the next line, after a
        // space or a tab, as servers of the 1990s wrote long values. A client must read each fold
        // as one space: "X-Folded: first part second part third part".
        return plain_text(200, id, head_only, target, "",
                          "X-Folded: first part\r\n second part\r\n\t third part\r\n");
    }
    if (name == "keep-open") {
        // A complete response without "Connection: close", and the connection stays open: the
        // client must stop at Content-Length instead of waiting for the close.
        const std::string body = echo_line(target, id);
        text = head_start(200, id, "text/plain; charset=utf-8") +
               "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
        answer.ending = Ending::keep_open;
        return answer;
    }
    if (name == "no-body") {
        // 204 has no body by definition, so the response ends at the blank line; the socket stays
        // open, so a client that waits for the close instead hangs.
        text = head_start(204, id, "text/plain; charset=utf-8") + "\r\n";
        answer.ending = Ending::keep_open;
        return answer;
    }
    return plain_text(404, id, head_only, target,
                      "unknown fault; known: reset close partial-headers trickle hang stall "
                      "bad-status short-body big-headers bad-chunk keep-open no-body folded-header\n");
}

// ---- /site/... ----

std::string replace_host(std::string_view text, std::string_view host) {
    std::string result;
    constexpr std::string_view placeholder = "{host}";
    std::size_t from = 0;
    for (std::size_t at; (at = text.find(placeholder, from)) != std::string_view::npos;
         from = at + placeholder.size()) {
        result += text.substr(from, at - from);
        result += host;
    }
    result += text.substr(from);
    return result;
}

Answer site(std::uint64_t id, bool head_only, std::string_view target, std::string_view host) {
    const SitePage* page = find_site_page(target);
    if (page == nullptr) return plain_text(404, id, head_only, target, "no such page\n");
    if (page->status != 200) {
        const std::string location = "Location: " + replace_host(page->content, host) + "\r\n";
        return plain_text(page->status, id, head_only, target, "moved\n", location);
    }
    std::string body = replace_host(page->content, host);
    if (page->content_type.starts_with("text/html")) {
        body = "<!DOCTYPE html>\n<html><head><title>" + std::string(target) +
               "</title></head><body>\n" + body + "</body></html>\n";
    }
    Answer answer = respond(200, id, head_only, page->content_type, {}, std::move(body));
    answer.wait = std::chrono::milliseconds(page->delay_ms);
    return answer;
}

// ---- /status/CODE ----

Answer status(std::uint64_t id, bool head_only, std::string_view target, int code) {
    if (code < 200) {
        // An interim response is never the answer: the final one follows it, and a client must
        // read past the first (RFC 9110 section 15.2).
        Answer answer = plain_text(200, id, head_only, target, "after an interim response\n");
        answer.output.text = head_start(code, id, "text/plain; charset=utf-8") + "\r\n" +
                             answer.output.text;
        return answer;
    }
    if (code == 204 || code == 304) {
        // No body, and so no Content-Length either: the response ends with its head.
        Answer answer;
        answer.output.text = head_start(code, id, "text/plain; charset=utf-8") +
                             "Connection: close\r\n\r\n";
        return answer;
    }
    return plain_text(code, id, head_only, target, "");
}

std::string json_string(std::string_view text) {
    std::string quoted = "\"";
    for (char c : text) {
        if (c == '"' || c == '\\') quoted += '\\';
        quoted += c;  // targets are printable ASCII (the request parser saw to it)
    }
    return quoted + "\"";
}

}  // namespace

std::string_view filler_text(std::uint64_t position, std::size_t max_bytes) {
    const std::size_t start = position % filler_line.size();
    const std::size_t length = max_bytes < filler_block_bytes ? max_bytes : filler_block_bytes;
    return std::string_view(filler_block()).substr(start, length);
}

bool Output::refill() {
    if (chunking != Chunking::in_body) return false;
    text.clear();
    text_sent = 0;
    if (chunks > 0) text += "\r\n";  // the end of the previous chunk's data
    if (unchunked > 0) {
        const std::uint64_t size = unchunked < chunk_bytes ? unchunked : chunk_bytes;
        text += hex(size) + ";n=" + std::to_string(chunks) + "\r\n";
        filler_left = size;
        unchunked -= size;
        ++chunks;
    } else {
        text += "0;last=\"yes, really\"\r\nX-Body-Bytes: " + std::to_string(body_bytes) + "\r\n\r\n";
        chunking = Chunking::done;
    }
    return true;
}

const char* request_class(std::string_view target) {
    const std::string_view path = target.substr(0, target.find('?'));
    constexpr std::array families = {"delay", "bytes", "chunked", "redirect", "status", "fault"};
    for (const char* family : families) {
        const std::string prefix = "/" + std::string(family) + "/";
        if (path.starts_with(prefix)) return family;
    }
    if (path == "/site" || path.starts_with("/site/")) return "site";
    if (path == "/stats") return "stats";
    return "plain";
}

Answer answer(const RequestHead& request, std::uint64_t id, const AnswerContext& context) {
    const std::string_view target = request.target;
    const bool head_only = request.method == "HEAD";
    const std::string_view path = target.substr(0, target.find('?'));
    const std::string_view klass = request_class(target);
    const std::string_view argument = path.substr(path.find('/', 1) + 1);  // after "/family/"
    std::uint64_t n = 0;

    if (klass == "plain") return plain_path(id, head_only, target, context.delay);
    if (klass == "delay") {
        if (!parse_number(argument, max_delay_ms, n)) {
            return bad_argument(id, head_only, target, "/delay/MS takes 0 to 600000 milliseconds");
        }
        return plain_path(id, head_only, target, std::chrono::milliseconds(n));
    }
    if (klass == "bytes") {
        if (!parse_number(argument, max_body_bytes, n)) {
            return bad_argument(id, head_only, target, "/bytes/N takes 0 to 1073741824 bytes");
        }
        std::uint64_t filler = 0;
        std::string echo = echo_then_filler(target, id, n, filler);
        return respond(200, id, head_only, "text/plain; charset=utf-8", {}, std::move(echo), filler);
    }
    if (klass == "chunked") {
        if (!parse_number(argument, max_body_bytes, n)) {
            return bad_argument(id, head_only, target, "/chunked/N takes 0 to 1073741824 bytes");
        }
        return chunked_body(id, head_only, target, n);
    }
    if (klass == "redirect") {
        if (!parse_number(argument, max_redirects, n)) {
            return bad_argument(id, head_only, target, "/redirect/K takes 0 to 1000 redirects");
        }
        if (n == 0) return plain_text(200, id, head_only, target, "");
        return plain_text(302, id, head_only, target, "",
                          "Location: /redirect/" + std::to_string(n - 1) + "\r\n");
    }
    if (klass == "status") {
        if (!parse_number(argument, 599, n) || n < 100) {
            return bad_argument(id, head_only, target, "/status/CODE takes 100 to 599");
        }
        return status(id, head_only, target, static_cast<int>(n));
    }
    if (klass == "fault") return fault(argument, id, head_only, target);
    if (klass == "site") {
        const std::string own_host(context.own_host);
        return site(id, head_only, target, request.host.empty() ? own_host : request.host);
    }
    // /stats
    return respond(200, id, head_only, "application/json", {}, stats_json(*context.stats) + "\n");
}

Answer error_answer(int status, std::string_view why, std::uint64_t id) {
    std::string extra;
    if (status == 405) extra = "Allow: GET, HEAD\r\n";
    return respond(status, id, false, "text/plain; charset=utf-8", extra,
                   "bad request: " + std::string(why) + "\n");
}

// requests_by_path is left out when it has grown past this many paths (a run with 100,000
// distinct paths would make /stats a megabyte); distinct_paths still says how many there are.
constexpr std::size_t max_paths_in_json = 1000;

std::string stats_json(const LabStats& stats) {
    std::string json = "{\"accepted\": " + std::to_string(stats.accepted) +
                       ", \"open_connections\": " + std::to_string(stats.open_connections) +
                       ", \"requests\": " + std::to_string(stats.requests) +
                       ", \"requests_by_class\": {";
    const char* separator = "";
    for (const auto& [klass, count] : stats.requests_by_class) {
        json += separator + json_string(klass) + ": " + std::to_string(count);
        separator = ", ";
    }
    json += "}, \"distinct_paths\": " + std::to_string(stats.requests_by_path.size());
    if (stats.requests_by_path.size() <= max_paths_in_json) {
        json += ", \"requests_by_path\": {";
        separator = "";
        for (const auto& [path, count] : stats.requests_by_path) {
            json += separator + json_string(path) + ": " + std::to_string(count);
            separator = ", ";
        }
        json += "}";
    }
    return json + "}";
}

}  // namespace sixways::lab
