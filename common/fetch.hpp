// The library call every stage offers, with one signature:
//
//     std::vector<Result> fetch_all(const std::vector<Request>& requests, const Options& options);
//
// A list of requests in, one Result per request out, in request order. Each stage writes its own
// fetch_all in its own folder (that is the lesson); these are the types they share.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "common/address.hpp"
#include "common/duration.hpp"
#include "common/http.hpp"
#include "common/url.hpp"

namespace sixways {

struct Request {
    Url url;
    std::vector<Address> addresses;  // resolved up front; tried in turn until one connects
};

enum class ErrorKind { none, resolve, connect, send, receive, timeout, protocol, limit };

// "connect", "timeout", ...: the keys of the report's "errors" object.
const char* to_string(ErrorKind kind);

// When each phase of a request ended. A phase that was never reached keeps the default (the clock's
// epoch), so a failed request shows how far it got.
struct Timing {
    Clock::time_point start;       // the first connect() began (waiting for a slot does not count)
    Clock::time_point connected;   // the connection was established
    Clock::time_point sent;        // the last byte of the request was handed to the kernel
    Clock::time_point first_byte;  // the first byte of the response arrived
    Clock::time_point done;        // the result became final (response complete or error)
};

struct Result {
    Response response;               // meaningful when ok()
    ErrorKind error = ErrorKind::none;
    std::string error_message;       // what failed and where: "connect: Connection refused",
                                     // "timeout after 10 s while receiving"
    Timing timing;

    bool ok() const { return error == ErrorKind::none; }  // a response of any status, 404 included

    // Makes this result final with an error: its kind, its message, and now as the time it ended.
    // The times of the phases the request reached stay, so a failed result shows how far it got.
    void fail(ErrorKind kind, std::string message);
};

struct Options {
    // At most this many requests in flight at once; 0 means all of them.
    std::size_t concurrency = 0;
    // The deadline of each request, from the start of its first connect to its last byte.
    Duration timeout = std::chrono::seconds(10);
    // Body bytes kept in each Result (the rest are only counted). The CLI keeps none.
    std::size_t body_cap = ResponseParser::default_body_cap;
    // Keep each response's headers in its Result. The CLI keeps none: its report needs the status
    // and the byte count, and 50,000 Results held 15 MB of headers.
    bool keep_headers = true;
    // Called once for each request, as soon as its result is final, with its index in `requests`.
    // Optional. Stage 02 calls it from its worker threads, so it must be safe to call concurrently,
    // and must not throw: an exception that leaves a thread ends the process.
    std::function<void(std::size_t index, const Result& result)> on_result;
};

using FetchAll = std::function<std::vector<Result>(const std::vector<Request>&, const Options&)>;

// ---- Small helpers for building error results; they keep the messages the same in every stage. ----

// `limit` for errors that mean a resource ran out (EMFILE, ENFILE, ENOBUFS, ENOMEM, EAGAIN from
// pthread_create, EADDRNOTAVAIL: no ephemeral port left); `otherwise` for anything else.
ErrorKind kind_for_errno(int error_number, ErrorKind otherwise);

// "connect: Connection refused" for ("connect", ECONNREFUSED).
std::string errno_message(const char* call, int error_number);

// "timeout after 10 s while receiving" for (10 s, "receiving"). Phases: "connecting", "sending",
// "waiting" (for the first byte), "receiving".
std::string timeout_message(Duration timeout, const char* phase);

// How a non-blocking connect ended, once its socket has turned writable: 0, or the errno connect()
// would have returned had it blocked (ECONNREFUSED, ETIMEDOUT, ...), read with getsockopt(SO_ERROR).
int connect_error(int fd);

// Makes `result` final with ErrorKind::limit and "out of memory": the command line calls it for each
// request left without a result when std::bad_alloc came out of fetch_all. Needs no memory
// itself (std::string keeps text this short in a buffer of its own, up to 15 characters in
// libstdc++), so it is safe to call where memory has just run out.
void fail_out_of_memory(Result& result) noexcept;

// The phase a request is in, read from the times it has reached so far: "connecting" until it is
// connected, "sending" until the request is sent, "waiting" until the first byte of the response
// arrives, "receiving" after that. For timeout_message.
const char* phase_name(const Timing& timing);

}  // namespace sixways
