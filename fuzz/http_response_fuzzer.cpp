// Fuzz target: the HTTP response parser (common/http.hpp) gives one result however the bytes are cut.
//
// Its header promises it, and its unit tests check it for a few dozen samples at every split
// point. Here the fuzzer chooses the bytes and the cuts. The reference is the whole input fed in
// one piece with the default options; the same bytes are then fed in the pieces the controls say
// (fuzz_input.hpp), with the options they choose, and everything must agree: the status after the
// last piece, headers_done(), then what finish() says (the peer closes), the error message, and
// for a complete response its status, reason, headers and body.
//
// The target's own options (control byte 0):
//   bit 0      the cut parse does not keep the headers (they must then be empty)
//   bits 1-2   its body cap: 16 MiB (the default), 0, 1 or 10 bytes (its body must then be the
//              reference's, cut to the cap, and count every byte all the same)
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/http.hpp"
#include "fuzz/fuzz_input.hpp"

namespace {

using sixways::Header;
using sixways::ResponseParser;
using sixways::fuzz::check;

struct Outcome {
    ResponseParser::Status after_data;  // once every piece is fed
    bool headers_done;
    ResponseParser::Status after_close;  // after finish()
    std::string error;
    sixways::Response response;
};

Outcome parse(const std::vector<std::string_view>& pieces, std::size_t body_cap, bool keep_headers) {
    ResponseParser parser(body_cap, keep_headers);
    Outcome outcome;
    for (const std::string_view piece : pieces) parser.feed(piece);
    outcome.after_data = parser.status();
    outcome.headers_done = parser.headers_done();
    outcome.after_close = parser.finish();
    outcome.error = parser.error();
    outcome.response = parser.take_response();
    return outcome;
}

bool same_headers(const std::vector<Header>& a, const std::vector<Header>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (a[i].name != b[i].name || a[i].value != b[i].value) return false;
    }
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    sixways::fuzz::FuzzInput input(data, size);
    const sixways::fuzz::Controls controls = sixways::fuzz::take_controls(input);
    const bool keep_headers = (controls.options & 0x01) == 0;
    constexpr std::size_t caps[] = {ResponseParser::default_body_cap, 0, 1, 10};
    const std::size_t body_cap = caps[(controls.options >> 1) & 0x03];
    const std::string bytes = sixways::fuzz::stretched(input.rest(), controls);

    const Outcome whole = parse({bytes}, ResponseParser::default_body_cap, true);
    const Outcome cut = parse(sixways::fuzz::cut(bytes, controls), body_cap, keep_headers);

    check(cut.after_data == whole.after_data, "the status after the data does not depend on the cuts");
    check(cut.headers_done == whole.headers_done, "headers_done() does not depend on the cuts");
    check(cut.after_close == whole.after_close, "the status after finish() does not depend on the cuts");
    check(cut.error == whole.error, "the error message does not depend on the cuts");
    if (whole.after_close != ResponseParser::Status::complete) return 0;

    const sixways::Response& a = whole.response;
    const sixways::Response& b = cut.response;
    // A final response: 1xx heads are skipped (and 101 refused), codes outside 100-599 rejected.
    check(a.status >= 200 && a.status <= 599, "a complete response has a final status code");
    check(b.status == a.status && b.reason == a.reason, "the status line does not depend on the cuts");
    check(keep_headers ? same_headers(b.headers, a.headers) : b.headers.empty(),
          "the headers are the same, or none when they are not kept");
    check(b.body_bytes == a.body_bytes, "every body byte is counted, kept or not");
    check(a.body.size() == a.body_bytes, "the default cap keeps the whole body of a small input");
    check(b.body == a.body.substr(0, body_cap), "the body is the same, up to the cap");
    return 0;
}
