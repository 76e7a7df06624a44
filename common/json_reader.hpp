// Just enough JSON to read the project's own reports back: the whole of RFC 8259's grammar, read into
// a small tree. The tests use it to check that a stage's --json output is "exactly one JSON object"
// and that a --trace file is valid; the compare tool uses it to read each stage's report. Strict on
// purpose: anything more or less than one value is an error, and so is a string that is not UTF-8.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace sixways {

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
    // The same, but a missing member is a JsonError naming it.
    const Json& at(std::string_view key) const;
};

class JsonError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// How deeply arrays and objects may nest. The reader recurses once per level, so a limit keeps a
// hostile file from exhausting the stack; the project's own reports and traces nest 3 levels deep.
constexpr int json_max_depth = 256;

// Parses a text that holds exactly one JSON value, with optional whitespace around it.
// Throws JsonError ("at offset 12: expected ':'") for anything else, trailing text included,
// and for nesting deeper than json_max_depth.
Json parse_json(std::string_view text);

}  // namespace sixways
