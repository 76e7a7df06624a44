// Durations on the command line: "2" (seconds), "2.5s", "250ms".
#pragma once

#include <chrono>
#include <stdexcept>
#include <string>
#include <string_view>

namespace sixways {

using Clock = std::chrono::steady_clock;
using Duration = std::chrono::nanoseconds;

class DurationError : public std::invalid_argument {
public:
    using std::invalid_argument::invalid_argument;
};

// Accepts a non-negative number of seconds ("2", "2.5", "2.5s") or milliseconds ("250ms").
// Throws DurationError naming the bad text for anything else (negative, empty, "5 min", overflow).
Duration parse_duration(std::string_view text);

// For messages: "10 s", "2.5 s", "250 ms", "0.5 ms".
std::string format_duration(Duration d);

}  // namespace sixways
