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

// `from + delay`, or the clock's last instant when the sum would not fit: a deadline hours, years or
// Duration::max() away means "not for a long time", never a time in the past (and signed overflow is
// undefined behaviour). A negative delay gives `from + delay` as it is.
Clock::time_point deadline_after(Clock::time_point from, Duration delay);

// How long epoll_wait (or poll) may sleep to wake at `deadline`: 0 if it has passed, otherwise the
// time left rounded UP to whole milliseconds, at most INT_MAX. Rounded down, the wait would end just
// before the deadline, find nothing due, and poll again with a timeout of 0, spinning until it is.
int milliseconds_until(Clock::time_point now, Clock::time_point deadline);

}  // namespace sixways
