// The server side of HTTP/1.x: reading a request head that arrives in pieces of any size.
//
// The lab server only needs the method, the target and the Host header, so this parser is small. It
// is strict where a mistake would hide a client bug (a malformed request line is answered 400 at
// once, before the rest of the head arrives) and bounded where a client could make the server
// hoard memory (a head over max_head_bytes is answered 431).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace sixways::lab {

struct RequestHead {
    std::string method;  // "GET" or "HEAD" once complete (anything else is answered 405)
    std::string target;  // "/path?query", always starting with '/' (the path of an absolute URL)
    std::string host;    // the authority of an absolute URL target, else the Host header's value;
                         // empty if the client sent neither
};

class RequestParser {
public:
    enum class Status { need_more, complete, invalid };

    static constexpr std::size_t max_head_bytes = 16 * 1024;

    // Appends the next bytes read from the connection. Returns complete once the blank line that
    // ends the head has arrived (bytes after it are ignored: the server answers one request per
    // connection), invalid when the request cannot be answered (see error_status()), need_more
    // otherwise. Once complete or invalid, further calls change nothing.
    Status feed(std::string_view bytes);

    Status status() const { return status_; }
    const RequestHead& head() const { return head_; }
    // For an invalid request: the status to answer with (400, 405, 431 or 505) and why.
    int error_status() const { return error_status_; }
    const std::string& error() const { return error_; }

private:
    Status fail(int status, std::string why);
    Status parse_request_line(std::string_view line);
    Status parse_header_line(std::string_view line);

    Status status_ = Status::need_more;
    std::string buffer_;          // the head so far; emptied (and its memory freed) once parsed
    std::size_t scanned_ = 0;     // bytes of buffer_ already searched for the end of the head
    bool request_line_checked_ = false;
    bool http11_ = false;  // the request line says HTTP/1.1 (not 1.0)
    bool seen_host_ = false;
    std::string target_authority_;  // "host:port" of a target in absolute form, else empty
    RequestHead head_;
    int error_status_ = 0;
    std::string error_;
};

}  // namespace sixways::lab
