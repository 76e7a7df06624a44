#include "lab/timeline.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/json_reader.hpp"
#include "common/trace.hpp"
#include "lab/tests/svg_check.hpp"

namespace sixways::lab {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;
using testing::count_elements;
using testing::xml_problem;

const Clock::time_point t0 = Clock::time_point{} + std::chrono::hours(3);

Result answered(int start_ms, int done_ms) {
    Result result;
    result.timing = {t0 + milliseconds(start_ms), t0 + milliseconds(start_ms + 1),
                     t0 + milliseconds(start_ms + 2), t0 + milliseconds(done_ms - 1),
                     t0 + milliseconds(done_ms)};
    result.response.status = 200;
    return result;
}

std::string trace_of(const std::vector<Result>& results) {
    TraceRun run{"07_test", "http://127.0.0.1:8080/", results.size(), t0, t0 + milliseconds(1), "", {}};
    return format_trace(run, results);
}

// The rectangles of one colour: the phases drawn in it.
std::size_t filled(const std::string& svg, const std::string& colour) {
    return count_elements(svg, "rect", "fill=\"" + colour + "\"");
}

TEST(TimelineSvg, DrawsEveryRequestAndItsFourPhasesOnWellFormedSvg) {
    std::string svg = timeline_svg(trace_of({answered(1, 100), answered(2, 100), answered(3, 100)}));
    EXPECT_EQ(xml_problem(svg), "");
    // Each colour appears once in the legend, and then once per request.
    EXPECT_EQ(filled(svg, "#4e79a7"), 1u + 3u);  // connect
    EXPECT_EQ(filled(svg, "#f28e2b"), 1u + 3u);  // send
    EXPECT_EQ(filled(svg, "#bab0ac"), 1u + 3u);  // wait
    EXPECT_EQ(filled(svg, "#59a14f"), 1u + 3u);  // receive
    EXPECT_EQ(filled(svg, "#e8e8e8"), 1u + 3u);  // the whole request
    EXPECT_EQ(filled(svg, "#b07aa1"), 1u + 1u);  // the resolve
    EXPECT_EQ(filled(svg, "#e15759"), 1u);       // nothing failed: only the legend's
    EXPECT_THAT(svg, HasSubstr(">07_test: 3 requests to http://127.0.0.1:8080/</text>"));
    EXPECT_THAT(svg, HasSubstr(">lane 3</text>"));
    EXPECT_THAT(svg, HasSubstr(">time (ms)</text>"));
}

TEST(TimelineSvg, DrawsTheLoopAndTheTaskStepsOnRowsOfTheirOwnUnderTheLanes) {
    const std::vector<Result> results = {answered(1, 100), answered(2, 100)};
    TraceRun run{"07_test", "http://127.0.0.1:8080/", results.size(), t0, t0 + milliseconds(1), "", {}};
    run.loop.turns = {{t0 + milliseconds(2), t0 + milliseconds(99), t0 + milliseconds(100), 2, 2}};
    run.loop.steps = {{t0 + milliseconds(99), t0 + milliseconds(100), "task \"request 0\"", "fetch", "", ""}};
    const std::string svg = timeline_svg(format_trace(run, results));
    EXPECT_EQ(xml_problem(svg), "");
    EXPECT_EQ(filled(svg, "#d9d2e9"), 1u + 1u);  // epoll_wait: the legend's, and the one turn's
    EXPECT_EQ(filled(svg, "#76b7b2"), 1u + 1u);  // the turn
    EXPECT_EQ(filled(svg, "#edc948"), 1u + 1u);  // the step
    EXPECT_THAT(svg, HasSubstr(">lane 2</text>"));
    EXPECT_THAT(svg, ::testing::Not(HasSubstr(">lane 3</text>")));  // the loop is not a lane
    EXPECT_THAT(svg, HasSubstr(">loop</text>"));
    EXPECT_THAT(svg, HasSubstr(">task steps</text>"));
}

TEST(TimelineSvg, DrawsThePhaseAFailedRequestEndedInRed) {
    Result refused;
    refused.timing.start = t0 + milliseconds(1);
    refused.timing.done = t0 + milliseconds(2);
    refused.error = ErrorKind::connect;
    refused.error_message = "connect: Connection refused";
    std::string svg = timeline_svg(trace_of({refused, answered(1, 50)}));
    EXPECT_EQ(xml_problem(svg), "");
    EXPECT_EQ(filled(svg, "#e15759"), 1u + 1u);
    EXPECT_EQ(filled(svg, "#4e79a7"), 1u + 1u);  // the connect that worked
    EXPECT_THAT(svg, HasSubstr("2 requests in "));
    EXPECT_THAT(svg, HasSubstr("1 failed"));
}

TEST(TimelineSvg, KeepsManyLanesWithinItsHeight) {
    std::vector<Result> results;
    for (int i = 0; i < 2000; ++i) {
        results.push_back(answered(i % 7, 200));
    }
    std::string svg = timeline_svg(trace_of(results));
    EXPECT_EQ(xml_problem(svg), "");
    // 2000 lanes, all at once; the document stays under 800 units tall.
    std::size_t at = svg.find("height=\"") + 8;
    EXPECT_LT(std::stod(svg.substr(at, svg.find('"', at) - at)), 800);
    EXPECT_THAT(svg, HasSubstr(">lane 2000</text>"));
    EXPECT_THAT(svg, ::testing::Not(HasSubstr(">lane 1000</text>")));
}

// One request span with these tid, ts and dur, as a file may spell them.
std::string one_span(const std::string& tid, const std::string& ts, const std::string& dur) {
    return R"({"traceEvents":[{"ph":"X","name":"r","cat":"request","tid":)" + tid + R"(,"ts":)" + ts +
           R"(,"dur":)" + dur + "}]}";
}

TEST(TimelineSvg, DrawsTheLargestLaneNumberATraceCanHold) {
    std::string svg = timeline_svg(one_span("2147483647", "0", "5"));
    EXPECT_EQ(xml_problem(svg), "");
    EXPECT_THAT(svg, HasSubstr(">lane 1</text>"));
    EXPECT_THAT(svg, HasSubstr(">lane 2147483647</text>"));
}

TEST(TimelineSvg, RejectsATidTsOrDurThatNoDrawingCanHold) {
    const std::vector<std::vector<std::string>> bad = {
        {"2147483648", "0", "5"}, {"-1", "0", "5"},   {"1.5", "0", "5"}, {"1e300", "0", "5"},
        {"1", "1e999", "5"},      {"1", "-1", "5"},   {"1", "0", "-5"},  {"1", "0", "1e999"},
        {"1", "1e308", "1e308"}};
    for (const std::vector<std::string>& values : bad) {
        EXPECT_THROW(timeline_svg(one_span(values[0], values[1], values[2])), std::runtime_error)
            << values[0] << " " << values[1] << " " << values[2];
    }
}

TEST(TimelineSvg, RejectsWhatIsNotATrace) {
    EXPECT_THROW(timeline_svg("not json"), JsonError);
    EXPECT_THROW(timeline_svg("{\"events\": []}"), std::runtime_error);
}

}  // namespace
}  // namespace sixways::lab
