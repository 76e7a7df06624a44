#include "common/trace.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "common/json_reader.hpp"

namespace sixways {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using testing::ElementsAre;

// An arbitrary moment on the clock; every time below is an offset from it.
const Clock::time_point t0 = Clock::time_point{} + std::chrono::hours(2);

Clock::time_point at_ms(double ms) {
    return t0 + std::chrono::duration_cast<Clock::duration>(
                    std::chrono::duration<double, std::milli>(ms));
}

Result answered(double start, double connected, double sent, double first_byte, double done) {
    Result result;
    result.timing = {at_ms(start), at_ms(connected), at_ms(sent), at_ms(first_byte), at_ms(done)};
    result.response.status = 200;
    result.response.body_bytes = 100;
    return result;
}

Result interval(double start, double done) { return answered(start, start, start, start, done); }

Result refused(double start, double done) {
    Result result;
    result.timing.start = at_ms(start);
    result.timing.done = at_ms(done);
    result.error = ErrorKind::connect;
    result.error_message = "connect: Connection refused";
    return result;
}

Result timed_out_waiting(double start, double connected, double sent, double done) {
    Result result;
    result.timing.start = at_ms(start);
    result.timing.connected = at_ms(connected);
    result.timing.sent = at_ms(sent);
    result.timing.done = at_ms(done);
    result.error = ErrorKind::timeout;
    result.error_message = "timeout after 1 s while waiting";
    return result;
}

TraceRun fake_run(std::size_t requests) {
    TraceRun run;
    run.stage = "07_test";
    run.url = "http://127.0.0.1:8080/";
    run.requests = requests;
    run.resolve_start = at_ms(0);
    run.resolve_done = at_ms(0.25);
    return run;
}

// A complete ("X") event of the trace, read back from its JSON.
struct Span {
    std::string name;
    double tid;
    double ts;   // microseconds
    double dur;
    Json args;
};

std::vector<Span> spans_in(const std::string& text) {
    const Json trace = parse_json(text);  // throws if the file is not exactly one JSON value
    std::vector<Span> spans;
    for (const Json& event : trace.at("traceEvents").items) {
        EXPECT_EQ(event.at("pid").number, 1);
        if (event.at("ph").string == "X") {
            spans.push_back({event.at("name").string, event.at("tid").number, event.at("ts").number,
                             event.at("dur").number, event.at("args")});
        } else {
            EXPECT_EQ(event.at("ph").string, "M") << "only spans and names";
        }
    }
    return spans;
}

// The spans of one request, in file order (the request's own span first).
std::vector<Span> spans_of_request(const std::vector<Span>& spans, double index) {
    std::vector<Span> found;
    for (const Span& span : spans) {
        const Json* request = span.args.find("request");
        if (request != nullptr && request->number == index) {
            found.push_back(span);
        }
    }
    return found;
}

std::vector<std::string> names(const std::vector<Span>& spans) {
    std::vector<std::string> result;
    for (const Span& span : spans) {
        result.push_back(span.name);
    }
    return result;
}

TEST(PackIntoLanes, OneRequestAfterAnotherFillsOneLane) {
    // The second starts at the very instant the first ends: it takes over the lane.
    EXPECT_THAT(pack_into_lanes({interval(0, 10), interval(10, 20), interval(25, 30)}),
                ElementsAre(1u, 1u, 1u));
}

TEST(PackIntoLanes, OverlappingRequestsGetAsManyLanesAsWereInFlight) {
    EXPECT_THAT(pack_into_lanes({interval(0, 100), interval(1, 100), interval(2, 100)}),
                ElementsAre(1u, 2u, 3u));
}

TEST(PackIntoLanes, ARequestTakesTheLowestLaneThatIsFree) {
    // At 60 lanes 1 and 2 are both free again (2 freed first): the next request takes lane 1, the
    // one after it lane 2.
    EXPECT_THAT(pack_into_lanes({interval(0, 50), interval(0, 40), interval(0, 100),
                                 interval(60, 70), interval(61, 70)}),
                ElementsAre(1u, 2u, 3u, 1u, 2u));
}

TEST(PackIntoLanes, PacksByStartTimeWhateverTheRequestOrder) {
    EXPECT_THAT(pack_into_lanes({interval(20, 30), interval(0, 10), interval(5, 25)}),
                ElementsAre(1u, 1u, 2u));
}

TEST(PackIntoLanes, ARequestThatNeverStartedHasNoLane) {
    EXPECT_THAT(pack_into_lanes({Result{}, interval(0, 1), Result{}}), ElementsAre(0u, 1u, 0u));
}

TEST(FormatTrace, IsOneJsonObjectWithATraceEventsArray) {
    const Json trace = parse_json(format_trace(fake_run(1), {answered(1, 2, 3, 4, 5)}));
    ASSERT_EQ(trace.type, Json::Type::object);
    EXPECT_EQ(trace.at("traceEvents").type, Json::Type::array);
}

TEST(FormatTrace, StartsWithTheResolveAtTimeZero) {
    const std::vector<Span> spans = spans_in(format_trace(fake_run(1), {answered(1, 2, 3, 4, 5)}));
    ASSERT_FALSE(spans.empty());
    EXPECT_EQ(spans[0].name, "resolve");
    EXPECT_EQ(spans[0].tid, 0);
    EXPECT_EQ(spans[0].ts, 0);
    EXPECT_DOUBLE_EQ(spans[0].dur, 250);
    EXPECT_EQ(spans[0].args.at("url").string, "http://127.0.0.1:8080/");
}

TEST(FormatTrace, ARequestThatGotAResponseHasItsSpanAndAllFourPhases) {
    const std::vector<Span> spans =
        spans_in(format_trace(fake_run(1), {answered(1, 2.5, 3, 10, 12.125)}));
    const std::vector<Span> request = spans_of_request(spans, 0);
    ASSERT_THAT(names(request), ElementsAre("request 0", "connect", "send", "wait", "receive"));
    // In microseconds from the resolve's start; each phase begins where the previous one ended.
    EXPECT_DOUBLE_EQ(request[0].ts, 1000);
    EXPECT_DOUBLE_EQ(request[0].dur, 11125);
    EXPECT_DOUBLE_EQ(request[1].ts, 1000);
    EXPECT_DOUBLE_EQ(request[1].dur, 1500);
    EXPECT_DOUBLE_EQ(request[2].ts, 2500);
    EXPECT_DOUBLE_EQ(request[2].dur, 500);
    EXPECT_DOUBLE_EQ(request[3].ts, 3000);
    EXPECT_DOUBLE_EQ(request[3].dur, 7000);
    EXPECT_DOUBLE_EQ(request[4].ts, 10000);
    EXPECT_DOUBLE_EQ(request[4].dur, 2125);
    for (const Span& span : request) {
        EXPECT_EQ(span.tid, 1) << span.name;
    }
    EXPECT_EQ(request[0].args.at("status").number, 200);
    EXPECT_EQ(request[0].args.at("bytes").number, 100);
}

TEST(FormatTrace, AFailedRequestEndsWithThePhaseItFailedInCarryingTheError) {
    const std::vector<Span> spans = spans_in(format_trace(
        fake_run(2), {refused(1, 1.5), timed_out_waiting(1, 2, 3, 1001)}));

    const std::vector<Span> refused_spans = spans_of_request(spans, 0);
    ASSERT_THAT(names(refused_spans), ElementsAre("request 0", "connect"));
    EXPECT_DOUBLE_EQ(refused_spans[1].dur, 500);
    EXPECT_EQ(refused_spans[0].args.at("error").string, "connect: Connection refused");
    EXPECT_EQ(refused_spans[1].args.at("error").string, "connect: Connection refused");
    EXPECT_EQ(refused_spans[1].args.at("kind").string, "connect");

    const std::vector<Span> timed_out = spans_of_request(spans, 1);
    ASSERT_THAT(names(timed_out), ElementsAre("request 1", "connect", "send", "wait"));
    EXPECT_EQ(timed_out[1].args.find("error"), nullptr) << "the connect itself went well";
    EXPECT_EQ(timed_out[3].args.at("error").string, "timeout after 1 s while waiting");
    EXPECT_DOUBLE_EQ(timed_out[3].ts, 3000);
    EXPECT_DOUBLE_EQ(timed_out[3].dur, 998000);
}

TEST(FormatTrace, EveryPhaseLiesInsideItsRequestOnTheSameTrack) {
    std::vector<Result> results;
    for (int i = 0; i < 20; ++i) {
        results.push_back(answered(i * 0.3, i * 0.3 + 0.1, i * 0.3 + 0.2, i * 0.3 + 5, i * 0.3 + 6));
    }
    results.push_back(timed_out_waiting(2, 3, 4, 9));
    const std::vector<Span> spans = spans_in(format_trace(fake_run(results.size()), results));
    for (std::size_t i = 0; i < results.size(); ++i) {
        const std::vector<Span> request = spans_of_request(spans, static_cast<double>(i));
        ASSERT_GE(request.size(), 2u);
        for (std::size_t k = 1; k < request.size(); ++k) {
            EXPECT_EQ(request[k].tid, request[0].tid);
            EXPECT_GE(request[k].ts, request[0].ts);
            EXPECT_LE(request[k].ts + request[k].dur, request[0].ts + request[0].dur);
        }
    }
}

TEST(FormatTrace, NamesTheProcessAndOneTrackPerLane) {
    const std::string text =
        format_trace(fake_run(3), {interval(0, 10), interval(1, 10), interval(20, 30)});
    const Json trace = parse_json(text);
    std::vector<std::string> track_names;
    std::string process_name;
    for (const Json& event : trace.at("traceEvents").items) {
        if (event.at("ph").string != "M") {
            continue;
        }
        if (event.at("name").string == "process_name") {
            process_name = event.at("args").at("name").string;
        } else {
            track_names.push_back(event.at("args").at("name").string);
        }
    }
    EXPECT_EQ(process_name, "07_test: 3 requests to http://127.0.0.1:8080/");
    EXPECT_THAT(track_names, ElementsAre("resolve", "lane 1", "lane 2"));
}

TEST(FormatTrace, AFailedResolveIsTheOnlySpanAndCarriesTheError) {
    TraceRun run = fake_run(3);
    run.resolve_error = "resolve: Name or service not known";
    Result failed;
    failed.error = ErrorKind::resolve;
    failed.error_message = run.resolve_error;
    const std::vector<Span> spans = spans_in(format_trace(run, {failed, failed, failed}));
    ASSERT_EQ(spans.size(), 1u);
    EXPECT_EQ(spans[0].name, "resolve");
    EXPECT_EQ(spans[0].args.at("error").string, "resolve: Name or service not known");
}

TEST(FormatTrace, EscapesQuotesAndControlCharactersInMessages) {
    Result odd = refused(1, 2);
    odd.error_message = "protocol: bad \"status\"\r\n\\";
    const std::vector<Span> spans = spans_in(format_trace(fake_run(1), {odd}));
    // Written escaped, read back as it was.
    EXPECT_EQ(spans_of_request(spans, 0)[0].args.at("error").string, odd.error_message);
}

// The loop's records (from the --explain hooks) go on tracks of their own, after the lanes: each
// turn's epoll_wait and the turn itself on one, stage 06's task steps on the next.
TEST(FormatTrace, PutsTheLoopsTurnsAndTheTaskStepsOnTracksAfterTheLanes) {
    TraceRun run = fake_run(2);
    run.loop.turns = {{at_ms(1), at_ms(101), at_ms(102), 2, 2}};
    run.loop.steps = {{at_ms(101), at_ms(102), "task \"request 0\"", "receive_response",
                       "fd 5 readable completed the future it awaited in receive_response",
                       "done: fetch returned"}};
    const std::vector<Span> spans = spans_in(format_trace(run, {interval(1, 102), interval(1, 102)}));
    std::vector<Span> loop;
    for (const Span& span : spans) {
        if (span.tid > 2) loop.push_back(span);  // two requests in flight at once: lanes 1 and 2
    }
    ASSERT_THAT(names(loop), ElementsAre("epoll_wait", "turn 1", "task \"request 0\""));
    EXPECT_EQ(loop[0].tid, 3);
    EXPECT_DOUBLE_EQ(loop[0].ts, 1000);
    EXPECT_DOUBLE_EQ(loop[0].dur, 100'000);  // the sleep
    EXPECT_EQ(loop[0].args.at("events").number, 2);
    EXPECT_EQ(loop[1].tid, 3);
    EXPECT_EQ(loop[1].args.at("ran").number, 2);
    EXPECT_EQ(loop[2].tid, 4);
    EXPECT_EQ(loop[2].args.at("resumes").string, "receive_response");
    EXPECT_EQ(loop[2].args.at("suspends_on").string, "done: fetch returned");
}

TEST(FormatTrace, SaysWhenTheLoopsTrackWasCut) {
    TraceRun run = fake_run(0);
    run.loop.turns = {{at_ms(1), at_ms(2), at_ms(3), 0, 0}};
    run.loop.turns_dropped = 4;
    EXPECT_NE(format_trace(run, {}).find("\"loop (the first 1 of 5)\""), std::string::npos);
}

TEST(FormatTrace, AnEmptyRunHasOnlyTheResolve) {
    const std::vector<Span> spans = spans_in(format_trace(fake_run(0), {}));
    EXPECT_THAT(names(spans), ElementsAre("resolve"));
}

}  // namespace
}  // namespace sixways
