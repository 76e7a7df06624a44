// A tiny blocking HTTP client for the lab server's tests: a socket with timeouts and a response
// parser that keeps everything (interim responses, chunk extensions, trailers) so tests can look
// at the exact bytes. It depends on nothing but POSIX, so these tests do not depend on any stage.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sixways::lab::test {

using namespace std::chrono_literals;

struct ReadResult {
    std::string bytes;
    bool closed = false;  // the server closed the connection (recv returned 0)
    int error = 0;        // errno of a failed recv: ECONNRESET, or EAGAIN when the timeout passed
};

class Client {
public:
    // Connects to host:port (a numeric address). Every later call fails after `timeout`.
    // Throws std::runtime_error if the connection cannot be made.
    Client(const std::string& host, std::uint16_t port, std::chrono::milliseconds timeout = 2000ms);
    ~Client();
    Client(const Client&) = delete;
    Client& operator=(const Client&) = delete;

    // Sends every byte; throws std::runtime_error on failure.
    void send(std::string_view bytes);
    // Reads until the server closes, an error, or the timeout.
    ReadResult read_to_end();
    // Reads until at least `count` bytes have arrived (or the end, an error, the timeout).
    ReadResult read_at_least(std::size_t count);
    // Reads for `wait` (shorter than the timeout), collecting whatever arrives.
    ReadResult read_for(std::chrono::milliseconds wait);
    // Reads until what arrived contains `marker` (or the end, an error, the timeout).
    ReadResult read_until(std::string_view marker);
    void close();
    int fd() const { return fd_; }

private:
    ReadResult read_until_done(const std::function<bool(const std::string&)>& done);

    int fd_ = -1;
    std::chrono::milliseconds timeout_;
};

// "GET /x HTTP/1.1\r\nHost: HOST\r\nConnection: close\r\n\r\n"
std::string request_text(std::string_view target, std::string_view method = "GET",
                         std::string_view host = "127.0.0.1");

struct Reply {
    int status = 0;                    // of the final response; 0 when the bytes were not one
    std::string status_line;
    std::vector<int> interim_statuses;  // 1xx responses that came first
    std::vector<std::pair<std::string, std::string>> headers;   // names in lower case
    std::string body;                                           // after chunked decoding
    std::vector<std::string> chunk_extensions;                  // ";n=1", one per chunk
    std::vector<std::pair<std::string, std::string>> trailers;  // names in lower case
    bool chunked = false;
    std::string error;                 // why the bytes are not a complete response

    // The value of the first header with this (lower-case) name, or "" when there is none.
    std::string header(std::string_view name) const;
};

// Parses the complete bytes of a connection as one response. A body is framed by Content-Length,
// by chunked encoding or by the end of the bytes; HEAD, 204 and 304 have none.
Reply parse_reply(std::string_view bytes, bool head_request = false);

// One request on a fresh connection (with "Host: 127.0.0.1:PORT"), read to the end and parsed.
// status is 0 (and error says why) when the connection or the response failed.
Reply fetch(std::uint16_t port, std::string_view target, std::string_view method = "GET",
            const std::string& host = "127.0.0.1");

// Whether this machine has an IPv6 loopback, ::1, to listen on. A container on Docker's default
// network has none, and the tests that need it skip there.
bool has_ipv6_loopback();

// The body of /bytes/N (and /chunked/N): the echo line "path=TARGET id=ID\n", then 64-byte lines
// of filler text, cut at exactly n bytes.
std::string expected_body(std::string_view target, std::uint64_t id, std::size_t n);

}  // namespace sixways::lab::test
