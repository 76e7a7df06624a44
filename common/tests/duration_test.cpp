#include "common/duration.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <limits>
#include <string>
#include <string_view>

namespace sixways {
namespace {

using namespace std::chrono_literals;

// What parse_duration says about text it rejects, or "(accepted)".
std::string error_for(std::string_view text) {
    try {
        parse_duration(text);
    } catch (const DurationError& error) {
        return error.what();
    }
    return "(accepted)";
}

TEST(ParseDuration, ReadsAPlainNumberAsSeconds) {
    EXPECT_EQ(parse_duration("2"), 2s);
    EXPECT_EQ(parse_duration("2.5"), 2500ms);
    EXPECT_EQ(parse_duration("0"), 0s);
    EXPECT_EQ(parse_duration("007"), 7s);
}

TEST(ParseDuration, ReadsTheSecondsSuffix) {
    EXPECT_EQ(parse_duration("2.5s"), 2500ms);
    EXPECT_EQ(parse_duration("10s"), 10s);
    EXPECT_EQ(parse_duration("0s"), 0s);
}

TEST(ParseDuration, ReadsTheMillisecondsSuffix) {
    EXPECT_EQ(parse_duration("250ms"), 250ms);
    EXPECT_EQ(parse_duration("0.5ms"), 500us);
    EXPECT_EQ(parse_duration("0ms"), 0ms);
}

TEST(ParseDuration, ConvertsDecimalsExactlyToTheNanosecond) {
    EXPECT_EQ(parse_duration("0.1"), 100ms);
    EXPECT_EQ(parse_duration("1.000000001"), 1'000'000'001ns);
    EXPECT_EQ(parse_duration("0.000001ms"), 1ns);
}

TEST(ParseDuration, DropsDigitsFinerThanANanosecond) {
    EXPECT_EQ(parse_duration("0.0000000019"), 1ns);
    EXPECT_EQ(parse_duration("0.0000019ms"), 1ns);
}

TEST(ParseDuration, AcceptsTheLargestValueThatFitsInNanoseconds) {
    EXPECT_EQ(parse_duration("9223372036.854775807"), Duration::max());
    EXPECT_EQ(parse_duration("9223372036854.775807ms"), Duration::max());
}

TEST(ParseDuration, RejectsEmptyText) {
    EXPECT_EQ(error_for(""), "empty duration (expected e.g. 2, 2.5s or 250ms)");
}

TEST(ParseDuration, RejectsANegativeDuration) {
    EXPECT_EQ(error_for("-1"), "bad duration \"-1\": must not be negative");
    EXPECT_EQ(error_for("-0.5s"), "bad duration \"-0.5s\": must not be negative");
}

TEST(ParseDuration, RejectsTextThatIsNotANumber) {
    EXPECT_EQ(error_for("abc"), "bad duration \"abc\": expected a number, e.g. 2, 2.5s or 250ms");
    EXPECT_EQ(error_for("+2"), "bad duration \"+2\": expected a number, e.g. 2, 2.5s or 250ms");
    EXPECT_EQ(error_for(".5"), "bad duration \".5\": expected a number, e.g. 2, 2.5s or 250ms");
    EXPECT_EQ(error_for(" 2"), "bad duration \" 2\": expected a number, e.g. 2, 2.5s or 250ms");
    EXPECT_EQ(error_for("s"), "bad duration \"s\": expected a number, e.g. 2, 2.5s or 250ms");
}

TEST(ParseDuration, RejectsADotWithoutDigitsAfterIt) {
    EXPECT_EQ(error_for("2."), "bad duration \"2.\": expected digits after '.'");
    EXPECT_EQ(error_for("2.s"), "bad duration \"2.s\": expected digits after '.'");
}

TEST(ParseDuration, RejectsUnitsOtherThanSecondsAndMilliseconds) {
    EXPECT_EQ(error_for("5min"), "bad duration \"5min\": unknown unit \"min\" (use s or ms)");
    EXPECT_EQ(error_for("5us"), "bad duration \"5us\": unknown unit \"us\" (use s or ms)");
    EXPECT_EQ(error_for("5S"), "bad duration \"5S\": unknown unit \"S\" (use s or ms)");
}

TEST(ParseDuration, RejectsAnExponent) {
    EXPECT_EQ(error_for("1e400"), "bad duration \"1e400\": unknown unit \"e400\" (use s or ms)");
    EXPECT_EQ(error_for("1e3ms"), "bad duration \"1e3ms\": unknown unit \"e3ms\" (use s or ms)");
}

TEST(ParseDuration, RejectsTrailingJunk) {
    EXPECT_EQ(error_for("2.5.5"), "bad duration \"2.5.5\": unexpected \".5\" after the number");
    EXPECT_EQ(error_for("2s5"), "bad duration \"2s5\": unknown unit \"s5\" (use s or ms)");
    EXPECT_EQ(error_for("250ms "), "bad duration \"250ms \": unknown unit \"ms \" (use s or ms)");
    EXPECT_EQ(error_for("2-3"), "bad duration \"2-3\": unexpected \"-3\" after the number");
    EXPECT_EQ(error_for("5 s"), "bad duration \"5 s\": unexpected \" s\" after the number");
    EXPECT_EQ(error_for("2,5"), "bad duration \"2,5\": unexpected \",5\" after the number");
}

TEST(ParseDuration, RejectsValuesBeyondTheNanosecondRange) {
    EXPECT_EQ(error_for("9223372036.854775808"), "bad duration \"9223372036.854775808\": too large");
    EXPECT_EQ(error_for("9223372037"), "bad duration \"9223372037\": too large");
    EXPECT_EQ(error_for("9223372036854.775808ms"), "bad duration \"9223372036854.775808ms\": too large");
    EXPECT_EQ(error_for("99999999999999999999999999999999"),
              "bad duration \"99999999999999999999999999999999\": too large");
}

TEST(FormatDuration, UsesSecondsFromOneSecondUp) {
    EXPECT_EQ(format_duration(10s), "10 s");
    EXPECT_EQ(format_duration(2500ms), "2.5 s");
    EXPECT_EQ(format_duration(1s), "1 s");
    EXPECT_EQ(format_duration(90s), "90 s");
}

TEST(FormatDuration, UsesMillisecondsBelowOneSecond) {
    EXPECT_EQ(format_duration(250ms), "250 ms");
    EXPECT_EQ(format_duration(500us), "0.5 ms");
    EXPECT_EQ(format_duration(0s), "0 ms");
}

TEST(FormatDuration, ShowsTheExactValueWithoutTrailingZeros) {
    EXPECT_EQ(format_duration(1'000'000'001ns), "1.000000001 s");
    EXPECT_EQ(format_duration(999'999'999ns), "999.999999 ms");
    EXPECT_EQ(format_duration(1ns), "0.000001 ms");
    EXPECT_EQ(format_duration(1250ms), "1.25 s");
}

TEST(FormatDuration, WritesANegativeDurationWithAMinusSign) {
    EXPECT_EQ(format_duration(-250ms), "-250 ms");
    EXPECT_EQ(format_duration(-2500ms), "-2.5 s");
    EXPECT_EQ(format_duration(Duration::min()), "-9223372036.854775808 s");
}

TEST(FormatDuration, WithoutTheSpaceParsesBackToTheSameDuration) {
    for (const Duration d : {Duration(0), Duration(1), Duration(999'999), Duration(1'000'000), Duration(123'456'789),
                             Duration(999'999'999), Duration(1'000'000'000), Duration(1'000'000'001),
                             Duration(2'500'000'000), Duration::max()}) {
        std::string text = format_duration(d);
        text.erase(text.find(' '), 1);
        EXPECT_EQ(parse_duration(text), d) << text;
    }
}

TEST(DeadlineAfter, AddsADelayThatFits) {
    const Clock::time_point now = Clock::now();
    EXPECT_EQ(deadline_after(now, 10s), now + 10s);
    EXPECT_EQ(deadline_after(now, 0s), now);
    EXPECT_EQ(deadline_after(now, -5ms), now - 5ms);
}

TEST(DeadlineAfter, StopsAtTheClocksLastInstantInsteadOfOverflowing) {
    const Clock::time_point now = Clock::now();
    EXPECT_EQ(deadline_after(now, Duration::max()), Clock::time_point::max());
    // The largest --timeout the command line accepts: 9223372036 s.
    EXPECT_EQ(deadline_after(now, parse_duration("9223372036")), Clock::time_point::max());
    EXPECT_GT(deadline_after(now, parse_duration("9223372036")), now);
}

TEST(MillisecondsUntil, RoundsUpSoThatTheWaitNeverEndsEarly) {
    const Clock::time_point now = Clock::now();
    EXPECT_EQ(milliseconds_until(now, now + 1ns), 1);
    EXPECT_EQ(milliseconds_until(now, now + 1ms), 1);
    EXPECT_EQ(milliseconds_until(now, now + 1001us), 2);
    EXPECT_EQ(milliseconds_until(now, now + 2s), 2000);
}

TEST(MillisecondsUntil, IsZeroForADeadlineReachedAndAtMostIntMaxForOneFarAway) {
    const Clock::time_point now = Clock::now();
    EXPECT_EQ(milliseconds_until(now, now), 0);
    EXPECT_EQ(milliseconds_until(now, now - 1s), 0);
    EXPECT_EQ(milliseconds_until(now, Clock::time_point::max()), std::numeric_limits<int>::max());
    EXPECT_EQ(milliseconds_until(now, deadline_after(now, Duration::max())), std::numeric_limits<int>::max());
}

}  // namespace
}  // namespace sixways
