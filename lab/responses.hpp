// What the lab server answers: a pure function from a request to an Answer (the bytes to send, how
// long to wait first, and how to end the connection). No sockets here; labserver.cpp carries the
// Answers out. Keeping the two apart lets the event loop stay short and lets a reader find every
// path's behaviour in one place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/duration.hpp"
#include "lab/labserver.hpp"
#include "lab/request.hpp"

namespace sixways::lab {

// Big bodies are never built in memory: they are slices of one static text of 64-byte lines
// ("abc...XYZ0123456789.\n"), repeated. Returns up to max_bytes of it starting at `position`
// (position 0 is the start of a line); always at least one byte when max_bytes > 0.
std::string_view filler_text(std::uint64_t position, std::size_t max_bytes);

// The bytes of one response, as a small state machine the server drains: first `text`, then
// `filler_left` bytes of the filler text; when both are sent, refill() queues the next part (the
// next chunk of a chunked body, or its last chunk and trailer). A 1 GiB body costs a few dozen bytes
// of state, not a gigabyte.
struct Output {
    std::string text;                   // the head, a small body, chunk framing
    std::size_t text_sent = 0;
    std::uint64_t filler_left = 0;      // filler bytes still to send after `text`
    std::uint64_t filler_position = 0;  // where in the filler text the next one comes from

    // Chunked bodies: how many filler bytes still have to be framed into chunks.
    enum class Chunking { none, in_body, done };
    Chunking chunking = Chunking::none;
    std::uint64_t unchunked = 0;
    std::uint64_t body_bytes = 0;       // the whole body, for the trailer
    std::uint32_t chunks = 0;           // chunks queued so far (the first carries the echo line)

    bool drained() const { return text_sent == text.size() && filler_left == 0; }
    // Call when drained(): queues the next part and returns true, or returns false when the
    // response is complete.
    bool refill();
};

// How the server ends a connection once an Answer's bytes are sent.
enum class Ending {
    close,      // the normal end: shut down our side (our FIN ends the answer), read and discard
                // what the client still sends until it closes (at most a second), then close. A
                // socket closed with bytes unread (a body the server does not use, pipelined
                // requests) sends a reset that can destroy the answer in flight (RFC 9112 section
                // 9.6). Our FIN goes first, so TIME_WAIT stays on the server's side.
    reset,      // SO_LINGER 0, then close(): the client sees ECONNRESET
    keep_open,  // leave the connection open until the client closes it
};

struct Answer {
    Duration wait{};   // before the first byte
    Output output;
    bool trickle = false;  // send one byte every trickle_interval instead of all at once
    Ending ending = Ending::close;
};

// /fault/trickle sends about 140 bytes, so the whole answer takes about half a second.
inline constexpr Duration trickle_interval = std::chrono::milliseconds(3);

// The family a target belongs to, for the statistics: "plain", "delay", "bytes", "chunked",
// "redirect", "status", "stats", "fault" or "site". ("invalid" is used for requests that could not
// be parsed; it is never returned here.)
const char* request_class(std::string_view target);

struct AnswerContext {
    Duration delay;             // the server's delay for plain paths
    std::string_view own_host;  // "127.0.0.1:8080": for absolute links when a request has no Host
    const LabStats* stats;      // for /stats; already counts the request being answered
};

// The answer to a valid request. `id` is its X-Request-Id.
Answer answer(const RequestHead& request, std::uint64_t id, const AnswerContext& context);

// The answer to a request that could not be parsed (400, 405, 431 or 505), sent at once.
Answer error_answer(int status, std::string_view why, std::uint64_t id);

// The statistics as one JSON object (what /stats serves).
std::string stats_json(const LabStats& stats);

}  // namespace sixways::lab
