// Just enough JSON to check a stage's --json report: the whole of RFC 8259's grammar, read into a
// small tree. Strict on purpose: "exactly one JSON object and nothing else" is what is being tested.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace sixways::conformance {

struct Json {
    enum class Type { null, boolean, number, string, array, object };

    Type type = Type::null;
    bool boolean = false;
    double number = 0;
    std::string string;
    std::vector<Json> items;         // an array's elements, or an object's values
    std::vector<std::string> keys;   // an object's keys, in order; keys[i] names items[i]

    // The value of an object's member, or nullptr if there is none (or this is not an object).
    const Json* find(std::string_view key) const;
};

class JsonError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Parses a text that holds exactly one JSON value, with optional whitespace around it.
// Throws JsonError ("at offset 12: expected ':'") for anything else, trailing text included.
Json parse_json(std::string_view text);

}  // namespace sixways::conformance
