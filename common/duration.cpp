// Durations on the command line ("2", "2.5s", "250ms") and in messages ("2.5 s", "250 ms").
//
// The number is converted with integer arithmetic, digit by digit, rather than through a double:
// "0.1s" becomes exactly 100'000'000 ns, and a value too large for the nanosecond range is caught
// before it can overflow instead of turning into an undefined or infinite conversion.
#include "common/duration.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <limits>

namespace sixways {
namespace {

constexpr std::int64_t nanoseconds_per_second = 1'000'000'000;
constexpr std::int64_t nanoseconds_per_millisecond = 1'000'000;

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ascii_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

}  // namespace

// Grammar: DIGITS [ "." DIGITS ] [ "s" | "ms" ]. No sign, no exponent, no spaces. Fraction digits
// finer than a nanosecond are dropped (truncated).
Duration parse_duration(std::string_view text) {
    const auto error = [&](std::string_view why) {
        return DurationError("bad duration \"" + std::string(text) + "\": " + std::string(why));
    };
    if (text.empty()) throw DurationError("empty duration (expected e.g. 2, 2.5s or 250ms)");
    if (text.front() == '-') throw error("must not be negative");

    std::size_t i = 0;
    while (i < text.size() && is_digit(text[i])) ++i;
    const std::string_view whole = text.substr(0, i);
    if (whole.empty()) throw error("expected a number, e.g. 2, 2.5s or 250ms");

    std::string_view fraction;
    if (i < text.size() && text[i] == '.') {
        const std::size_t fraction_start = ++i;
        while (i < text.size() && is_digit(text[i])) ++i;
        fraction = text.substr(fraction_start, i - fraction_start);
        if (fraction.empty()) throw error("expected digits after '.'");
    }

    const std::string_view unit = text.substr(i);
    std::int64_t nanoseconds_per_unit = 0;
    int fraction_digits = 0;  // decimals of the unit that are still whole nanoseconds
    if (unit.empty() || unit == "s") {
        nanoseconds_per_unit = nanoseconds_per_second;
        fraction_digits = 9;
    } else if (unit == "ms") {
        nanoseconds_per_unit = nanoseconds_per_millisecond;
        fraction_digits = 6;
    } else if (is_ascii_letter(unit.front())) {
        throw error("unknown unit \"" + std::string(unit) + "\" (use s or ms)");
    } else {
        throw error("unexpected \"" + std::string(unit) + "\" after the number");
    }

    constexpr std::int64_t max = std::numeric_limits<std::int64_t>::max();
    // The whole part, checked against the largest value that still fits once scaled.
    const std::int64_t max_whole = max / nanoseconds_per_unit;
    std::int64_t whole_value = 0;
    for (const char c : whole) {
        whole_value = whole_value * 10 + (c - '0');
        if (whole_value > max_whole) throw error("too large");
    }
    // The fraction, as nanoseconds: "25" of a second is 250'000'000 ns.
    std::int64_t fraction_value = 0;
    for (int digit = 0; digit < fraction_digits; ++digit) {
        const std::size_t index = static_cast<std::size_t>(digit);
        fraction_value = fraction_value * 10 + (index < fraction.size() ? fraction[index] - '0' : 0);
    }
    if (whole_value * nanoseconds_per_unit > max - fraction_value) throw error("too large");
    return Duration(whole_value * nanoseconds_per_unit + fraction_value);
}

// The rule: seconds from 1 s up, milliseconds below; the exact value (to the nanosecond), with as
// many decimals as it needs and no trailing zeros. So 10 s, 2.5 s, 250 ms, 0.5 ms, 0 ms, and
// 1.000000001 s for a value just over a second; a negative duration gets a minus sign. A
// non-negative one, written without the space, parses back to the same Duration.
std::string format_duration(Duration d) {
    const std::int64_t count = d.count();
    // The magnitude as unsigned, so that the most negative value has one too.
    const std::uint64_t magnitude = count < 0 ? 0 - static_cast<std::uint64_t>(count)
                                              : static_cast<std::uint64_t>(count);
    const bool in_seconds = magnitude >= static_cast<std::uint64_t>(nanoseconds_per_second);
    const std::uint64_t unit = static_cast<std::uint64_t>(in_seconds ? nanoseconds_per_second
                                                                     : nanoseconds_per_millisecond);
    const std::size_t fraction_digits = in_seconds ? 9 : 6;

    std::string text = count < 0 ? "-" : "";
    text += std::to_string(magnitude / unit);
    if (const std::uint64_t fraction = magnitude % unit; fraction != 0) {
        std::string digits = std::to_string(fraction);
        digits.insert(0, fraction_digits - digits.size(), '0');  // 5'000'000 ns -> "005000000"
        digits.erase(digits.find_last_not_of('0') + 1);         // -> "005"
        text += "." + digits;
    }
    text += in_seconds ? " s" : " ms";
    return text;
}

Clock::time_point deadline_after(Clock::time_point from, Duration delay) {
    if (delay > Clock::time_point::max() - from) return Clock::time_point::max();
    return from + delay;
}

int milliseconds_until(Clock::time_point now, Clock::time_point deadline) {
    if (deadline <= now) return 0;
    // deadline - now cannot overflow: both are on the clock, deadline is later, and the steady
    // clock's epoch (boot) is not before 0.
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
    return static_cast<int>(std::min<decltype(ms)>(ms, INT_MAX));
}

}  // namespace sixways
