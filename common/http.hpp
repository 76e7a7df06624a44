// HTTP/1.x on the client side: the GET request we send and an incremental parser for the response.
//
// The parser is fed whatever recv() returned, in pieces of any size (down to one byte), and gives the
// same result for every split. The simplest fetcher calls recv(1024) once and takes that for the
// response; a real response arrives in as many pieces as the network likes, and its end is known
// only from its framing: Content-Length, chunked encoding, or the server closing the connection.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/url.hpp"

namespace sixways {

struct Header {
    std::string name;
    std::string value;
};

struct Response {
    int status = 0;
    std::string reason;
    std::vector<Header> headers;
    std::string body;            // the first body_cap bytes of the body (after chunked decoding)
    std::size_t body_bytes = 0;  // every body byte, kept or not

    // The value of the first header with this name (case-insensitive), or nullptr.
    const std::string* header(std::string_view name) const;
};

// "GET /target HTTP/1.1\r\nHost: ...\r\nConnection: close\r\n...\r\n\r\n"
std::string build_get_request(const Url& url);

class ResponseParser {
public:
    enum class Status { need_more, complete, error };

    static constexpr std::size_t max_header_bytes = 64 * 1024;
    static constexpr std::size_t default_body_cap = 16 * 1024 * 1024;

    // Keeps the first body_cap bytes of the body (all of them are counted), and the headers unless
    // keep_headers is false: then they are read only for the framing, and response().headers
    // stays empty. A client that reads only the status saves a few hundred bytes a response.
    explicit ResponseParser(std::size_t body_cap = default_body_cap, bool keep_headers = true);

    // Feeds the next bytes of the connection. Returns complete as soon as the framing says the
    // response has ended (bytes after that are ignored: a server that keeps the connection open
    // after Content-Length bytes has still answered), error for malformed input (a protocol error;
    // error() says what), need_more otherwise. Once complete or error, further calls change nothing.
    Status feed(std::string_view bytes);

    // The peer closed the connection (recv returned 0). Completes a body delimited by the close;
    // anything else unfinished is an error ("connection closed after 10 of 100 body bytes").
    Status finish();

    Status status() const { return status_; }
    const std::string& error() const { return error_; }
    // True once a whole status line and header block (of a final, non-1xx response) has been read.
    bool headers_done() const;
    // The response; complete only when status() == complete.
    const Response& response() const { return response_; }
    Response take_response() { return std::move(response_); }

private:
    // Where the next byte goes. The head is read line by line (status_line, then header_line
    // until the empty line); then one of the three body framings; chunked bodies alternate
    // chunk_size and chunk_data lines until the last chunk, then the trailer section.
    enum class Part { status_line, header_line, body_length, body_until_close, chunk_size,
                      chunk_data, chunk_data_end, trailer, done };
    enum class Line { incomplete, complete, too_long };

    // A chunk-size line is "1a2b" plus optional extensions; anything longer than this is abuse.
    static constexpr std::size_t max_chunk_line_bytes = 4096;

    Line collect_line(std::string_view& bytes, std::size_t max_bytes, std::string_view& line);
    Status on_status_line(std::string_view line);
    Status on_header_line(std::string_view line);
    Status on_folded_line(std::string_view line, std::string_view kind);
    Status on_end_of_head();
    Status choose_framing();
    Status on_chunk_size_line(std::string_view line);
    Status on_trailer_line(std::string_view line);
    void append_body(std::string_view bytes);
    Status complete();
    Status fail(std::string message);

    Status status_ = Status::need_more;
    Part part_ = Part::status_line;
    std::string error_;
    std::string line_;                  // a line split across feeds, so far (head, chunk-size or
                                        // trailer); empty while lines arrive whole
    std::size_t section_bytes_ = 0;     // bytes of the head (or of the trailer) in finished lines
    std::size_t body_cap_;
    bool keep_headers_;
    std::uint64_t content_length_ = 0;  // the framing's length, for finish()'s message
    std::uint64_t remaining_ = 0;       // body bytes left (Content-Length) or bytes left in this chunk
    bool received_any_ = false;         // has any byte arrived at all?
    bool after_interim_ = false;        // was a 1xx response skipped?
    bool headers_done_ = false;
    bool may_fold_ = false;               // the line before was a field line: a fold continues it
    bool fold_into_last_header_ = false;  // and it is response_.headers.back(), so the fold is kept
    Response response_;
};

}  // namespace sixways
