// Fuzz target: the JSON reader (common/json_reader.hpp) and what compare --timeline draws with it
// (lab/timeline.hpp) never crash, hang or overflow the stack on any file.
//
// A trace file or a report handed to compare is input like any other: a user may give it any file.
// So the reader must answer every text with a value or a JsonError, and nothing else: no stack
// overflow on deep nesting, no other exception. A value it accepts keeps the promises its header
// makes: object keys name the items one to one, and every string is UTF-8. The timeline may refuse
// a value (a JsonError or a runtime_error naming what is wrong), or draw it, and must do either
// fast, whatever numbers the file holds.
//
// Input: the text, the whole input.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "common/json_reader.hpp"
#include "common/utf8.hpp"
#include "fuzz/fuzz_input.hpp"
#include "lab/timeline.hpp"

namespace {

using sixways::Json;
using sixways::fuzz::check;

bool is_utf8(std::string_view text) {
    while (!text.empty()) {
        const std::size_t length = sixways::utf8_sequence_length(text);
        if (length == 0) return false;
        text.remove_prefix(length);
    }
    return true;
}

// Walks the value with an explicit stack of pointers, so that checking a deep value cannot
// overflow the stack either.
void check_value(const Json& root) {
    std::vector<const Json*> pending = {&root};
    while (!pending.empty()) {
        const Json& value = *pending.back();
        pending.pop_back();
        check(is_utf8(value.string), "every string is UTF-8");
        if (value.type == Json::Type::object) {
            check(value.keys.size() == value.items.size(), "an object has one key per item");
            for (const std::string& key : value.keys) check(is_utf8(key), "every key is UTF-8");
        } else {
            check(value.keys.empty(), "only an object has keys");
        }
        if (value.type != Json::Type::object && value.type != Json::Type::array) {
            check(value.items.empty(), "only an array or an object has items");
        }
        for (const Json& item : value.items) pending.push_back(&item);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    bool accepted = false;
    try {
        check_value(sixways::parse_json(text));
        accepted = true;
    } catch (const sixways::JsonError&) {
    }
    try {
        sixways::lab::timeline_svg(text);
        check(accepted, "the timeline draws only what the reader accepts");
    } catch (const std::runtime_error&) {  // JsonError, or "no traceEvents array" and the like
    }
    return 0;
}
