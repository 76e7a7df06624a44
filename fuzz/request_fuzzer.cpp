// Fuzz target: the lab server's request parser (lab/request.hpp), fed in pieces.
//
// The lab server feeds it whatever each read returned, so, like the client's response parser, it
// must give one result however the bytes are cut: the input is fed whole, then in the pieces the
// controls say (fuzz_input.hpp), and the status, the error and the head must agree. What it
// answers must also match what the bytes are:
//   - complete: a GET or HEAD whose target starts with '/' and is printable ASCII without spaces
//     (the server echoes it in the body and the /stats JSON), and a Host without control
//     characters; the head (up to its empty line) fits in max_head_bytes;
//   - invalid: one of the statuses the header lists (400, 405, 431, 505), with a reason;
//   - need_more: the bytes hold no empty line yet and are within max_head_bytes (a client that
//     sends more than that without ending its head must be answered 431, not waited for).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_input.hpp"
#include "lab/request.hpp"

namespace {

using sixways::fuzz::check;
using sixways::lab::RequestParser;

RequestParser parse(const std::vector<std::string_view>& pieces) {
    RequestParser parser;
    for (const std::string_view piece : pieces) parser.feed(piece);
    return parser;
}

bool is_target_char(char c) { return c > 0x20 && c < 0x7f; }

bool is_control(char c) {
    const auto byte = static_cast<unsigned char>(c);
    return (byte < 0x20 && c != '\t') || byte == 0x7f;
}

// Where the head ends: after the first empty line ("\n\n" or "\n\r\n"), or npos.
std::size_t head_end(std::string_view bytes) {
    for (std::size_t i = 0; i < bytes.size(); ++i) {
        if (bytes[i] != '\n') continue;
        if (bytes.substr(i + 1, 1) == "\n") return i + 2;
        if (bytes.substr(i + 1, 2) == "\r\n") return i + 3;
    }
    return std::string_view::npos;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    sixways::fuzz::FuzzInput input(data, size);
    const sixways::fuzz::Controls controls = sixways::fuzz::take_controls(input);
    const std::string bytes = sixways::fuzz::stretched(input.rest(), controls);

    const RequestParser whole = parse({bytes});
    const RequestParser cut = parse(sixways::fuzz::cut(bytes, controls));
    check(cut.status() == whole.status(), "the status does not depend on the cuts");
    check(cut.error_status() == whole.error_status() && cut.error() == whole.error(),
          "the error does not depend on the cuts");
    check(cut.head().method == whole.head().method && cut.head().target == whole.head().target &&
              cut.head().host == whole.head().host,
          "the head does not depend on the cuts");

    const sixways::lab::RequestHead& head = whole.head();
    switch (whole.status()) {
    case RequestParser::Status::complete:
        check(head.method == "GET" || head.method == "HEAD", "a complete request is a GET or a HEAD");
        check(head.target.starts_with('/') && std::all_of(head.target.begin(), head.target.end(), is_target_char),
              "its target is a path of printable ASCII");
        check(std::none_of(head.host.begin(), head.host.end(), is_control), "its Host has no control character");
        check(head_end(bytes) <= RequestParser::max_head_bytes, "its head fits the limit");
        break;
    case RequestParser::Status::invalid: {
        const int status = whole.error_status();
        check(status == 400 || status == 405 || status == 431 || status == 505, "an invalid request gets a known status");
        check(!whole.error().empty(), "and a reason");
        break;
    }
    case RequestParser::Status::need_more:
        check(head_end(bytes) == std::string_view::npos, "it waits only for a head that has not ended");
        check(bytes.size() <= RequestParser::max_head_bytes, "and only up to the limit");
        break;
    }
    return 0;
}
