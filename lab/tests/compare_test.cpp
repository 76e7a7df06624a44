#include "lab/compare.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/json_reader.hpp"
#include "lab/compare_process.hpp"
#include "lab/svg.hpp"
#include "lab/tests/svg_check.hpp"
#include "lab/tests/test_client.hpp"
#include "tests/child_process.hpp"

namespace sixways::lab {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing::count_elements;
using testing::xml_problem;

Program stage(const std::string& name, bool one_at_a_time = false) {
    return {Program::Kind::stage, name, "/bin/" + name, "", one_at_a_time};
}

RunReport run_of(double wall_s, std::size_t failed = 0, std::optional<double> p50 = 100.0,
                 std::optional<double> p99 = 110.0) {
    RunReport run;
    run.ok = 10 - failed;
    run.failed = failed;
    run.wall_s = wall_s;
    run.cpu_s = wall_s / 10;
    run.max_rss_kb = 2048;
    run.p50_ms = p50;
    run.p99_ms = p99;
    return run;
}

Row row_of(const std::string& program, std::size_t n, std::vector<RunReport> runs,
           std::string note = "") {
    Row row;
    row.program = program;
    row.requests = n;
    row.attempts = runs.size();
    row.runs = std::move(runs);
    row.note = std::move(note);
    return row;
}

// ---- What each program is run as ----

TEST(CommandLine, RunsAStageWithJsonAndEveryRequestAtOnce) {
    EXPECT_THAT(command_line(stage("04_callbacks"), 1000, 0, "http://127.0.0.1:1234/"),
                ElementsAre("/bin/04_callbacks", "1000", "--url", "http://127.0.0.1:1234/", "--json"));
}

TEST(CommandLine, RunsTheAiohttpScriptWithTheInterpreterThatHasAiohttp) {
    Program peer{Program::Kind::aiohttp, "aiohttp", "/usr/bin/python3", "/x/aiohttp_fetch.py", false};
    EXPECT_THAT(command_line(peer, 10, 0, "http://h:1/"),
                ElementsAre("/usr/bin/python3", "/x/aiohttp_fetch.py", "10", "--url", "http://h:1/",
                            "--json"));
}

TEST(CommandLine, RunsApacheBenchWithAllRequestsInFlightUpToItsLimit) {
    Program ab{Program::Kind::ab, "ab", "/usr/bin/ab", "", false};
    EXPECT_THAT(command_line(ab, 100, 0, "http://h:1/"),
                ElementsAre("/usr/bin/ab", "-n", "100", "-c", "100", "-r", "-s", "10", "http://h:1/"));
    EXPECT_EQ(command_line(ab, 50000, 0, "http://h:1/")[4], "20000");
}

TEST(CommandLine, PassesTheConcurrencyToEveryProgramThatTakesIt) {
    EXPECT_THAT(command_line(stage("06_coroutines"), 50000, 1000, "http://h:1/"),
                ElementsAre("/bin/06_coroutines", "50000", "--url", "http://h:1/", "--json",
                            "--concurrency", "1000"));
    Program yardstick{Program::Kind::yardstick, "yardstick", "/bin/yardstick", "", false};
    EXPECT_THAT(command_line(yardstick, 50000, 1000, "http://h:1/"),
                ElementsAre("/bin/yardstick", "50000", "--url", "http://h:1/", "--json",
                            "--concurrency", "1000"));
    Program peer{Program::Kind::aiohttp, "aiohttp", "/usr/bin/python3", "/x/aiohttp_fetch.py", false};
    EXPECT_THAT(command_line(peer, 50000, 1000, "http://h:1/"),
                ElementsAre("/usr/bin/python3", "/x/aiohttp_fetch.py", "50000", "--url",
                            "http://h:1/", "--json", "--concurrency", "1000"));
    Program ab{Program::Kind::ab, "ab", "/usr/bin/ab", "", false};
    EXPECT_THAT(command_line(ab, 50000, 1000, "http://h:1/"),
                ElementsAre("/usr/bin/ab", "-n", "50000", "-c", "1000", "-r", "-s", "10",
                            "http://h:1/"));
}

TEST(CommandLine, GivesAbNoMoreInFlightThanRequestsAndTellsStageOneNothing) {
    Program ab{Program::Kind::ab, "ab", "/usr/bin/ab", "", false};
    EXPECT_EQ(command_line(ab, 10, 1000, "http://h:1/")[4], "10");  // ab refuses -c over -n
    EXPECT_THAT(command_line(stage("01_blocking", true), 10, 1000, "http://h:1/"),
                ElementsAre("/bin/01_blocking", "10", "--url", "http://h:1/", "--json"));
}

TEST(InFlight, IsTheConcurrencyOrNWhicheverIsSmallerAndOneForStageOne) {
    EXPECT_EQ(in_flight(stage("04_callbacks"), 10000, 0), 10000u);
    EXPECT_EQ(in_flight(stage("04_callbacks"), 10000, 100), 100u);
    EXPECT_EQ(in_flight(stage("04_callbacks"), 10, 100), 10u);
    EXPECT_EQ(in_flight(stage("01_blocking", true), 10000, 0), 1u);
    EXPECT_EQ(in_flight(stage("01_blocking", true), 10000, 100), 1u);
    Program ab{Program::Kind::ab, "ab", "/usr/bin/ab", "", false};
    EXPECT_EQ(in_flight(ab, 50000, 0), 20000u);
    EXPECT_EQ(in_flight(ab, 50000, 30000), 20000u);
}

// ---- Reading the reports ----

TEST(ReadJsonReport, ReadsAStagesReport) {
    RunReport run = read_json_report(
        R"({"stage":"04_callbacks","url":"http://127.0.0.1:8080/","requests":1000,"ok":998,)"
        R"("failed":2,"bytes":99800,"wall_s":0.131,"cpu_s":0.05,"max_rss_kb":9000,)"
        R"("concurrency":1000,"latency_ms":{"p50":102.5,"p99":118,"max":121},"errors":{"connect":2}})");
    EXPECT_EQ(run.ok, 998u);
    EXPECT_EQ(run.failed, 2u);
    EXPECT_DOUBLE_EQ(run.wall_s, 0.131);
    EXPECT_DOUBLE_EQ(run.cpu_s, 0.05);
    EXPECT_DOUBLE_EQ(run.max_rss_kb, 9000);
    EXPECT_EQ(run.p50_ms, 102.5);
    EXPECT_EQ(run.p99_ms, 118);
    EXPECT_EQ(run.errors, (std::map<std::string, std::size_t>{{"connect", 2}}));
}

TEST(ReadJsonReport, ReadsTheYardsticksReportWhichHasNoLatency) {
    RunReport run = read_json_report(
        R"({"stage":"yardstick","url":"http://127.0.0.1:8080/","requests":10,"ok":10,"failed":0,)"
        R"("bytes_received":4351,"wall_s":0.104,"cpu_s":0.001,"max_rss_kb":1500,"concurrency":10})");
    EXPECT_EQ(run.ok, 10u);
    EXPECT_DOUBLE_EQ(run.wall_s, 0.104);
    EXPECT_FALSE(run.p50_ms.has_value());
    EXPECT_FALSE(run.p99_ms.has_value());
}

TEST(ReadJsonReport, ANullLatencyIsUnknown) {
    RunReport run = read_json_report(
        R"({"ok":0,"failed":5,"wall_s":1,"cpu_s":0,"max_rss_kb":1,"latency_ms":{"p50":null,"p99":null}})");
    EXPECT_FALSE(run.p50_ms.has_value());
    EXPECT_EQ(run.failed, 5u);
}

TEST(ReadJsonReport, RejectsWhatIsNotAReport) {
    EXPECT_THROW(read_json_report(""), JsonError);
    EXPECT_THROW(read_json_report("04_callbacks: 10 requests ..."), JsonError);
    EXPECT_THROW(read_json_report(R"({"ok":1,"failed":0,"cpu_s":0,"max_rss_kb":1})"),
                 std::runtime_error);  // no wall_s
    EXPECT_THROW(read_json_report(R"({"ok":"1","failed":0,"wall_s":1,"cpu_s":0,"max_rss_kb":1})"),
                 std::runtime_error);  // a string where a number belongs
}

const char* const ab_output = R"(This is ApacheBench, Version 2.3 <$Revision$>
Benchmarking 127.0.0.1 (be patient).....done

Document Path:          /
Document Length:        100 bytes

Concurrency Level:      20
Time taken for tests:   0.115 seconds
Complete requests:      20
Failed requests:        1
Total transferred:      4351 bytes

Percentage of the requests served within a certain time (ms)
  50%     63
  66%     63
  99%     71
 100%     72 (longest request)
)";

TEST(ReadAbReport, ReadsCountsTimeAndPercentiles) {
    RunReport run = read_ab_report(ab_output, 20);
    EXPECT_EQ(run.ok, 19u);
    EXPECT_EQ(run.failed, 1u);
    EXPECT_DOUBLE_EQ(run.wall_s, 0.115);
    EXPECT_EQ(run.p50_ms, 63);
    EXPECT_EQ(run.p99_ms, 71);
}

TEST(ReadAbReport, CountsRequestsItNeverCompletedAsFailed) {
    EXPECT_EQ(read_ab_report(ab_output, 25).failed, 6u);
}

TEST(ReadAbReport, RejectsOutputWithoutItsTotals) {
    EXPECT_THROW(read_ab_report("apr_socket_connect(): Connection refused (111)\n", 20),
                 std::runtime_error);
}

// ---- Medians, the skip rule, the time limit ----

TEST(Median, IsTheMiddleValueOrTheMeanOfTheTwoMiddleOnes) {
    EXPECT_EQ(median({3, 1, 2}), 2);
    EXPECT_EQ(median({4, 1, 3, 2}), 2.5);
    EXPECT_EQ(median({7}), 7);
    EXPECT_TRUE(std::isnan(median({})));
}

TEST(SkipNote, SkipsOneAtATimeWhenNTimesDelayIsOverTwentySeconds) {
    const Program blocking = stage("01_blocking", true);
    EXPECT_EQ(skip_note(blocking, 200, 0, milliseconds(100)), std::nullopt);  // 20 s: still run
    EXPECT_EQ(skip_note(blocking, 1000, 0, milliseconds(100)), "skipped: would take about 100 s");
    EXPECT_EQ(skip_note(blocking, 10000, 0, milliseconds(100)), "skipped: would take about 1000 s");
    EXPECT_EQ(skip_note(blocking, 10000, 0, milliseconds(0)), std::nullopt);
}

TEST(SkipNote, NeverSkipsAProgramThatSendsEverythingAtOnce) {
    EXPECT_EQ(skip_note(stage("04_callbacks"), 1'000'000, 0, seconds(1)), std::nullopt);
    EXPECT_EQ(skip_note(stage("04_callbacks"), 100, 100, seconds(30)), std::nullopt);
}

TEST(SkipNote, SkipsWhenTheConcurrencyMakesTooManyRounds) {
    // 10,000 requests 10 at a time: 1000 rounds of 100 ms.
    EXPECT_EQ(skip_note(stage("04_callbacks"), 10000, 10, milliseconds(100)),
              "skipped: would take about 100 s");
    EXPECT_EQ(skip_note(stage("04_callbacks"), 10000, 1000, milliseconds(100)), std::nullopt);
}

TEST(TimeLimit, IsAMinutePlusThreeTimesTheExpectedTimePlusFiveMillisecondsARequest) {
    EXPECT_EQ(time_limit(stage("01_blocking", true), 100, 0, milliseconds(100)),
              milliseconds(90'500));
    EXPECT_EQ(time_limit(stage("04_callbacks"), 10000, 0, milliseconds(100)),
              milliseconds(110'300));
    // 10,000 at most 1000 at a time: 10 rounds of 100 ms, 1 s.
    EXPECT_EQ(time_limit(stage("04_callbacks"), 10000, 1000, milliseconds(100)), seconds(113));
    EXPECT_EQ(time_limit(stage("04_callbacks"), 10001, 1000, milliseconds(100)),
              milliseconds(113'305));  // a last, short round takes a delay too
    // No delay: the clients' own time, 250 s for 50,000.
    EXPECT_EQ(time_limit(stage("06_coroutines"), 50000, 1000, {}), seconds(310));
}

// ---- Rows ----

TEST(Row, GivesMediansAndTheMostFailuresOfAnyRun) {
    Row row = row_of("04_callbacks", 10, {run_of(0.3, 0, 100, 130), run_of(0.1, 2, 90, 110),
                                          run_of(0.2, 0, 95, 120)});
    EXPECT_DOUBLE_EQ(row.wall_s(), 0.2);
    EXPECT_DOUBLE_EQ(row.cpu_s(), 0.02);
    EXPECT_DOUBLE_EQ(row.max_rss_mb(), 2);
    EXPECT_DOUBLE_EQ(row.requests_per_s(), 50);
    EXPECT_DOUBLE_EQ(row.p50_ms(), 95);
    EXPECT_DOUBLE_EQ(row.p99_ms(), 120);
    EXPECT_EQ(row.failed(), 2u);
}

TEST(Row, WithoutRunsEverythingIsUnknown) {
    Row row = row_of("01_blocking", 10000, {}, "skipped: would take about 1000 s");
    EXPECT_TRUE(std::isnan(row.wall_s()));
    EXPECT_TRUE(std::isnan(row.requests_per_s()));
    EXPECT_EQ(row.failed(), std::nullopt);
}

TEST(Row, NamesTheErrorKindsOfTheRunWithTheMostFailures) {
    RunReport few = run_of(1, 1), most = run_of(1, 5);
    few.errors = {{"connect", 1}};
    most.errors = {{"connect", 2}, {"timeout", 3}};
    EXPECT_EQ(row_of("a", 10, {few, most, run_of(1)}).full_note(),
              "worst run: connect 2, timeout 3");
    EXPECT_EQ(row_of("a", 10, {most}).full_note(), "errors: connect 2, timeout 3");
    EXPECT_EQ(row_of("a", 10, {most}, "1 of 2 runs failed: exit 2").full_note(),
              "1 of 2 runs failed: exit 2; errors: connect 2, timeout 3");
    EXPECT_EQ(row_of("a", 10, {run_of(1)}, "").full_note(), "");
}

TEST(FormatValue, KeepsThreeSignificantDigits) {
    EXPECT_EQ(format_value(0.10432), "0.104");
    EXPECT_EQ(format_value(0.0004), "0.000");
    EXPECT_EQ(format_value(2.3456), "2.35");
    EXPECT_EQ(format_value(12.34), "12.3");
    EXPECT_EQ(format_value(1234.4), "1234");
    EXPECT_EQ(format_value(std::nan("")), "-");
}

// ---- The table and the CSV ----

std::vector<Row> sample_rows() {
    std::vector<Row> rows = {
        row_of("01_blocking", 10, {run_of(1.02)}),
        row_of("yardstick (C, no parser)", 10, {run_of(0.104, 0, std::nullopt, std::nullopt)}),
        row_of("01_blocking", 1000, {}, "skipped: would take about 100 s"),
        row_of("yardstick (C, no parser)", 1000, {run_of(0.25, 3, std::nullopt, std::nullopt)}),
    };
    for (Row& row : rows) {
        row.concurrency = row.program == "01_blocking" ? 1 : row.requests;
        row.server = "lab";
    }
    return rows;
}

TEST(FormatTable, IsAMarkdownTableGroupedByN) {
    EXPECT_EQ(format_table(sample_rows()),
              "| program | N | wall s | CPU s | peak MB | req/s | p50 ms | p99 ms | failed | note |\n"
              "|---|--:|--:|--:|--:|--:|--:|--:|--:|---|\n"
              "| 01_blocking | 10 | 1.02 | 0.102 | 2.00 | 10 | 100 | 110 | 0 |  |\n"
              "| yardstick (C, no parser) | 10 | 0.104 | 0.010 | 2.00 | 96 | - | - | 0 |  |\n"
              "| 01_blocking | 1000 | - | - | - | - | - | - | - | skipped: would take about 100 s |\n"
              "| yardstick (C, no parser) | 1000 | 0.250 | 0.025 | 2.00 | 4000 | - | - | 3 |  |\n");
}

TEST(FormatTable, GroupsRowsOfOneNTogetherWhateverTheirOrder) {
    std::vector<Row> rows = {row_of("a", 10, {run_of(1)}), row_of("a", 100, {run_of(1)}),
                             row_of("b", 10, {run_of(1)})};
    std::string table = format_table(rows);
    EXPECT_LT(table.find("| b | 10 |"), table.find("| a | 100 |"));
}

TEST(FormatRatios, GivesEachProgramsTimeAsAMultipleOfTheYardsticksAtTheSameNAndServer) {
    std::vector<Row> rows = {
        row_of("04_callbacks @ lab", 100, {run_of(0.3)}),
        row_of("04_callbacks @ nginx", 100, {run_of(0.5, 2)}),
        row_of("yardstick (C, no parser) @ lab", 100, {run_of(0.2)}),
        row_of("yardstick (C, no parser) @ nginx", 100, {run_of(0.4, 1)}),
        row_of("04_callbacks @ lab", 1000, {}, "skipped: would take about 100 s"),
        row_of("yardstick (C, no parser) @ lab", 1000, {run_of(0.1)}),
        row_of("06_coroutines @ lab", 10, {run_of(0.1)}),  // no yardstick at this N
    };
    for (Row& row : rows) {
        row.server = row.program.substr(row.program.rfind(' ') + 1);
        row.yardstick = row.program.rfind("yardstick", 0) == 0;
    }
    EXPECT_EQ(format_ratios(rows),
              "Wall time as a multiple of the yardstick's (medians, same N and server):\n"
              "- N = 100 @ lab: 04_callbacks 1.50\n"
              "- N = 100 @ nginx (the yardstick: 1 failed): 04_callbacks 1.25 (2 failed)\n");
}

TEST(FormatRatios, IsEmptyWithoutATimeForTheYardstick) {
    std::vector<Row> rows = {row_of("04_callbacks", 100, {run_of(0.3)}),
                             row_of("yardstick (C, no parser)", 100, {}, "failed: exit 2")};
    EXPECT_EQ(format_ratios(rows), "");
    rows[1].yardstick = true;
    EXPECT_EQ(format_ratios(rows), "");
}

TEST(FormatCsv, HasAHeaderAndOneLinePerRowWithEmptyUnknowns) {
    std::string csv = format_csv(sample_rows());
    std::istringstream lines(csv);
    std::string line;
    std::vector<std::string> all;
    while (std::getline(lines, line)) {
        all.push_back(line);
    }
    ASSERT_EQ(all.size(), 5u);
    // The columns of old first, so that a script reading them by position still works;
    // concurrency and server came later, at the end.
    EXPECT_EQ(all[0], "program,requests,runs,wall_s,cpu_s,peak_mb,requests_per_s,p50_ms,p99_ms,"
                      "failed,note,concurrency,server");
    EXPECT_EQ(all[1], "01_blocking,10,1,1.02,0.102,2,9.80392,100,110,0,,1,lab");
    EXPECT_EQ(all[3], "01_blocking,1000,0,,,,,,,,skipped: would take about 100 s,1,lab");
    // A program name with a comma is quoted.
    EXPECT_THAT(all[2], StartsWith("\"yardstick (C, no parser)\",10,1,0.104,"));
    EXPECT_THAT(all[4], ::testing::EndsWith(",3,,1000,lab"));
}

TEST(FormatCsv, QuotesFieldsWithCommasAndDoublesTheirQuotes) {
    std::string csv = format_csv({row_of("x", 1, {}, "failed: exit 1: said \"no\", twice")});
    EXPECT_THAT(csv, HasSubstr(",\"failed: exit 1: said \"\"no\"\", twice\",0,\n"));
}

// ---- The plot ----

std::vector<Row> ladder(const std::string& program, std::vector<double> walls) {
    std::vector<Row> rows;
    std::size_t n = 10;
    for (double wall : walls) {
        rows.push_back(std::isnan(wall) ? row_of(program, n, {}, "skipped")
                                        : row_of(program, n, {run_of(wall)}));
        n *= 10;
    }
    return rows;
}

TEST(PlotSvg, IsWellFormedWithALineAndADotPerPointOfEachProgram) {
    std::vector<Row> rows = ladder("01_blocking", {1, 10, std::nan(""), std::nan("")});
    for (const Row& row : ladder("04_callbacks", {0.1, 0.11, 0.2, 1.5})) {
        rows.push_back(row);
    }
    PlotOptions options{"lab server delay 100 ms", milliseconds(100), true};
    std::string svg = plot_svg(rows, options);
    EXPECT_EQ(xml_problem(svg), "");
    EXPECT_EQ(count_elements(svg, "polyline", "class=\"series\""), 2u);
    EXPECT_EQ(count_elements(svg, "circle", "class=\"point\""), 6u);
    EXPECT_EQ(count_elements(svg, "polyline", "class=\"reference\""), 2u);
    EXPECT_THAT(svg, HasSubstr(">01_blocking</text>"));
    EXPECT_THAT(svg, HasSubstr(">04_callbacks</text>"));
    EXPECT_THAT(svg, HasSubstr("N × delay (one at a time)"));
    EXPECT_THAT(svg, HasSubstr(">Wall time against N (lab server delay 100 ms)</text>"));
    EXPECT_THAT(svg, HasSubstr("requests (N), log scale"));
    EXPECT_THAT(svg, HasSubstr("wall time (s), log scale"));
    // One point of 04 per decade of N: its line has four points.
    std::size_t line = svg.find("stroke=\"#f28e2b\" stroke-width=\"2\" class=\"series\"");
    ASSERT_NE(line, std::string::npos);
    std::size_t start = svg.rfind("points=\"", line);
    std::string points = svg.substr(start, line - start);
    EXPECT_EQ(std::count(points.begin(), points.end(), ','), 4);
}

TEST(PlotSvg, AMissingValueBreaksTheLine) {
    std::string svg = plot_svg(ladder("02_threads", {0.1, 0.2, std::nan(""), 2}), {"t", {}, true});
    EXPECT_EQ(xml_problem(svg), "");
    EXPECT_EQ(count_elements(svg, "polyline", "class=\"series\""), 1u);  // the lone last point: a dot
    EXPECT_EQ(count_elements(svg, "circle", "class=\"point\""), 3u);
}

TEST(PlotSvg, DrawsAPointWithFailuresHollowAndSaysWhatThatMeans) {
    std::vector<Row> rows = {row_of("aiohttp", 10, {run_of(0.1)}),
                             row_of("aiohttp", 100, {run_of(0.3, 4)})};
    std::string svg = plot_svg(rows, {"t", milliseconds(100), true});
    EXPECT_EQ(xml_problem(svg), "");
    EXPECT_EQ(count_elements(svg, "circle", "class=\"point\""), 1u);
    EXPECT_EQ(count_elements(svg, "circle", "class=\"point failed\""), 1u);
    EXPECT_EQ(count_elements(svg, "polyline", "class=\"series\""), 1u);
    EXPECT_THAT(svg, HasSubstr(">some requests failed</text>"));
    EXPECT_THAT(plot_svg({rows[0]}, {"t", milliseconds(100), true}),
                ::testing::Not(HasSubstr("some requests failed")));
}

TEST(PlotSvg, LeavesOutTheReferenceLinesWithoutADelay) {
    std::string svg = plot_svg(ladder("04_callbacks", {0.01, 0.02}), {"t", {}, true});
    EXPECT_EQ(count_elements(svg, "polyline", "class=\"reference\""), 0u);
    svg = plot_svg(ladder("04_callbacks", {0.01, 0.02}), {"t", milliseconds(100), false});
    EXPECT_EQ(count_elements(svg, "polyline", "class=\"reference\""), 0u);
}

TEST(PlotSvg, EscapesNamesAndTitles) {
    std::string svg = plot_svg(ladder("a<b & c", {0.1, 0.2}), {"x \"&\" y", {}, true});
    EXPECT_EQ(xml_problem(svg), "");
    EXPECT_THAT(svg, HasSubstr(">a&lt;b &amp; c</text>"));
}

TEST(PlotSvg, DrawsAxesEvenWithNothingMeasured) {
    std::string svg = plot_svg(ladder("01_blocking", {std::nan(""), std::nan("")}),
                               {"t", milliseconds(100), true});
    EXPECT_EQ(xml_problem(svg), "");
    EXPECT_EQ(count_elements(svg, "circle", "class=\"point\""), 0u);
}

// The widths of the elements whose tag contains `with`, in document order.
std::vector<double> widths_of(const std::string& svg, const std::string& with) {
    std::vector<double> widths;
    for (std::size_t at = svg.find(with); at != std::string::npos; at = svg.find(with, at + 1)) {
        std::size_t tag = svg.rfind('<', at);
        std::size_t width = svg.find("width=\"", tag);
        if (width == std::string::npos || width > at) continue;
        widths.push_back(std::stod(svg.substr(width + 7)));
    }
    return widths;
}

TEST(PlotSvg, ASingleNIsABarPerProgramAsLongAsItsTime) {
    std::vector<Row> rows = {row_of("01_blocking", 10000, {}, "skipped: would take about 1000 s"),
                             row_of("04_callbacks", 10000, {run_of(0.6)}),
                             row_of("06_coroutines", 10000, {run_of(0.9)}),
                             row_of("yardstick", 10000, {run_of(0.3)})};
    std::string svg = plot_svg(rows, {"t", milliseconds(100), true});
    EXPECT_EQ(xml_problem(svg), "");
    EXPECT_EQ(count_elements(svg, "polyline", "class=\"series\""), 0u);
    EXPECT_EQ(count_elements(svg, "circle"), 0u);
    // Bars on a linear axis from zero: lengths in the ratio of the times.
    std::vector<double> bars = widths_of(svg, "class=\"bar\"");
    ASSERT_EQ(bars.size(), 3u);
    EXPECT_NEAR(bars[1] / bars[0], 1.5, 0.01);
    EXPECT_NEAR(bars[2] / bars[0], 0.5, 0.01);
    EXPECT_THAT(svg, HasSubstr(">0.900 s</text>"));
    EXPECT_THAT(svg, HasSubstr(">01_blocking</text>"));
    EXPECT_THAT(svg, HasSubstr(">no time</text>"));
    EXPECT_THAT(svg, HasSubstr("wall time (s) at N = 10000"));
    EXPECT_THAT(svg, HasSubstr(">Wall time (t)</text>"));  // not "against N": there is one N
    // "delay" (0.1 s) is on the axis; "N x delay" (1000 s) is far past it and left out.
    EXPECT_EQ(count_elements(svg, "line", "class=\"reference\""), 1u);
    EXPECT_THAT(svg, HasSubstr(">delay (all at once)</text>"));
    EXPECT_THAT(svg, ::testing::Not(HasSubstr("N × delay")));
    EXPECT_THAT(svg, ::testing::Not(HasSubstr("some requests failed")));
}

TEST(PlotSvg, ASingleNDrawsOneAtATimeWhenItIsOnTheAxisAndFailuresHollow) {
    std::vector<Row> rows = {row_of("01_blocking", 10, {run_of(1.02)}),
                             row_of("aiohttp", 10, {run_of(0.2, 4)})};
    std::string svg = plot_svg(rows, {"t", milliseconds(100), true});
    EXPECT_EQ(xml_problem(svg), "");
    EXPECT_EQ(count_elements(svg, "rect", "class=\"bar\""), 1u);
    EXPECT_EQ(count_elements(svg, "rect", "class=\"bar failed\""), 1u);
    EXPECT_EQ(count_elements(svg, "line", "class=\"reference\""), 2u);
    EXPECT_THAT(svg, HasSubstr(">N × delay (one at a time)</text>"));
    EXPECT_THAT(svg, HasSubstr(">some requests failed</text>"));
    // Without a delay (or with --url), no reference lines.
    EXPECT_EQ(count_elements(plot_svg(rows, {"t", {}, true}), "line", "class=\"reference\""), 0u);
    EXPECT_EQ(count_elements(plot_svg(rows, {"t", milliseconds(100), false}), "line",
                             "class=\"reference\""),
              0u);
}

// ---- The SVG helpers ----

TEST(Svg, NumbersHaveAtMostTwoDecimalsAndNoTrailingZeros) {
    EXPECT_EQ(svg::number(12.5), "12.5");
    EXPECT_EQ(svg::number(3), "3");
    EXPECT_EQ(svg::number(100), "100");
    EXPECT_EQ(svg::number(0.071), "0.07");
    EXPECT_EQ(svg::number(-0.001), "0");
}

TEST(Svg, LinearTicksAreRoundValuesCoveringTheRange) {
    EXPECT_THAT(svg::linear_ticks(0, 1000, 5), ElementsAre(0, 200, 400, 600, 800, 1000));
    EXPECT_THAT(svg::linear_ticks(0, 7.3, 8), ElementsAre(0, 1, 2, 3, 4, 5, 6, 7));
    EXPECT_TRUE(svg::linear_ticks(5, 5, 8).empty());
}

// ---- Child processes ----

TEST(RunToEnd, CollectsOutputAndExitStatus) {
    ChildOutcome run = run_to_end({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}, seconds(30), -1);
    EXPECT_EQ(run.out, "out\n");
    EXPECT_EQ(run.err, "err\n");
    EXPECT_EQ(run.exit_code, 3);
    EXPECT_FALSE(run.timed_out);
    EXPECT_EQ(run.describe(seconds(30)), "exit 3");
}

TEST(RunToEnd, KillsAChildThatOutlivesItsTimeLimit) {
    ChildOutcome run = run_to_end({"/bin/sleep", "30"}, milliseconds(200), -1);
    EXPECT_TRUE(run.timed_out);
    EXPECT_EQ(run.signal, SIGKILL);
    EXPECT_EQ(run.describe(milliseconds(200)), "killed after the time limit of 200 ms");
}

TEST(RunToEnd, StopsTheChildWhenTheStopDescriptorBecomesReadable) {
    int stop[2];
    ASSERT_EQ(pipe(stop), 0);
    ASSERT_EQ(write(stop[1], "s", 1), 1);
    ChildOutcome run = run_to_end({"/bin/sleep", "30"}, seconds(30), stop[0]);
    EXPECT_TRUE(run.stopped);
    EXPECT_FALSE(run.timed_out);
    close(stop[0]);
    close(stop[1]);
}

TEST(RunToEnd, CallsWhileWaitingAsTheChildRuns) {
    int calls = 0;
    ChildOutcome run = run_to_end({"/bin/sleep", "0.5"}, seconds(30), -1, [&calls] { ++calls; });
    EXPECT_EQ(run.exit_code, 0);
    EXPECT_GE(calls, 1) << "called while the child slept";
}

TEST(RunToEnd, SaysWhenAProgramCannotBeStarted) {
    ChildOutcome run = run_to_end({"/nonexistent/program"}, seconds(30), -1);
    EXPECT_EQ(run.start_error, "execv: No such file or directory");
    EXPECT_EQ(run.describe(seconds(30)), "could not start: execv: No such file or directory");
}

// ---- The yardstick's URL ----

// Its path goes into the request line and the --json report as it is: a byte that would break
// either is refused as bad usage (exit 2) before any connection.
TEST(YardstickBinary, RefusesAPathThatIsNotPrintableAsciiOrHoldsAQuoteOrABackslash) {
    const std::filesystem::path yardstick = std::filesystem::path(COMPARE_BINARY).parent_path() / "yardstick";
    if (!std::filesystem::exists(yardstick)) GTEST_SKIP() << "yardstick is not built next to compare";
    for (const std::string path : {"/caf\xE9", "/\xFF\xFE", "/a\"b", "/a\\b", "/a b", "/a\tb"}) {
        const ChildOutcome run = run_to_end({yardstick.string(), "1", "--url", "http://127.0.0.1:1" + path, "--json"},
                                            seconds(30), -1);
        EXPECT_EQ(run.exit_code, 2) << path << ": " << run.out << run.err;
        EXPECT_EQ(run.out, "") << path;
    }
}

// ---- The real program, once, small ----

// Two stages, N = 2, no delay: the table, the CSV and the plot come out, and the server is gone.
TEST(CompareBinary, RunsTwoStagesAndWritesTheTableCsvAndPlot) {
    const std::filesystem::path bin = std::filesystem::path(COMPARE_BINARY).parent_path();
    if (!std::filesystem::exists(bin / "01_blocking") || !std::filesystem::exists(bin / "04_callbacks")) {
        GTEST_SKIP() << "01_blocking and 04_callbacks are not built next to compare";
    }
    const std::filesystem::path out = std::filesystem::path(::testing::TempDir()) /
                                      ("compare_test_" + std::to_string(getpid()));
    std::filesystem::remove_all(out);
    ChildOutcome run = run_to_end({COMPARE_BINARY, "2", "--stages", "01,04", "--delay", "0",
                                   "--out", out.string()},
                                  seconds(120), -1);
    EXPECT_EQ(run.exit_code, 0) << run.err;
    EXPECT_THAT(run.out, HasSubstr("| 01_blocking | 2 |"));
    EXPECT_THAT(run.out, HasSubstr("| 04_callbacks | 2 |"));
    EXPECT_THAT(run.out, ::testing::Not(HasSubstr("yardstick")));

    std::ifstream csv(out / "results.csv");
    std::string header, first, second, extra;
    std::getline(csv, header);
    std::getline(csv, first);
    std::getline(csv, second);
    EXPECT_THAT(first, StartsWith("01_blocking,2,1,"));
    EXPECT_THAT(second, StartsWith("04_callbacks,2,1,"));
    EXPECT_THAT(first, ::testing::EndsWith(",0,,1,lab")) << "no failures, no note, one at a time";
    EXPECT_THAT(second, ::testing::EndsWith(",0,,2,lab")) << "both requests at once";
    EXPECT_FALSE(std::getline(csv, extra));

    std::ifstream plot(out / "results.svg");
    std::stringstream svg;
    svg << plot.rdbuf();
    EXPECT_EQ(xml_problem(svg.str()), "");
    // One N: a bar per program, under a title that does not promise a line against N.
    EXPECT_EQ(count_elements(svg.str(), "rect", "class=\"bar\""), 2u);
    EXPECT_THAT(svg.str(), HasSubstr(">Wall time (lab server delay 0 ms)</text>"));
    std::filesystem::remove_all(out);
}

// A tiny version is measured only when named in full ("06" is 06_coroutines, "04" 04_callbacks), and
// skipped, with the reason, under --concurrency, which it does not have.
TEST(CompareBinary, RunsATinyVersionOnlyWhenNamedInFullAndNotWithAConcurrency) {
    const std::filesystem::path bin = std::filesystem::path(COMPARE_BINARY).parent_path();
    for (const char* program : {"04_tiny", "06_tiny", "04_callbacks", "06_coroutines"}) {
        if (!std::filesystem::exists(bin / program)) GTEST_SKIP() << program << " is not built next to compare";
    }
    const std::filesystem::path out = std::filesystem::path(::testing::TempDir()) /
                                      ("compare_tiny_" + std::to_string(getpid()));
    std::filesystem::remove_all(out);
    ChildOutcome run = run_to_end({COMPARE_BINARY, "3", "--stages", "04_tiny,06,06_tiny", "--delay", "0",
                                   "--out", out.string()},
                                  seconds(120), -1);
    EXPECT_EQ(run.exit_code, 0) << run.err;
    EXPECT_THAT(run.out, HasSubstr("| 06_coroutines | 3 |"));
    EXPECT_THAT(run.out, HasSubstr("| 06_tiny | 3 |"));
    EXPECT_THAT(run.out, HasSubstr("| 04_tiny | 3 |"));
    EXPECT_THAT(run.out, ::testing::Not(HasSubstr("| 04_callbacks |")));

    run = run_to_end({COMPARE_BINARY, "3", "--stages", "04,06", "--delay", "0", "--out", out.string()},
                     seconds(120), -1);
    EXPECT_EQ(run.exit_code, 0) << run.err;
    EXPECT_THAT(run.out, ::testing::Not(HasSubstr("_tiny")));

    run = run_to_end({COMPARE_BINARY, "3", "--stages", "06,06_tiny,04_tiny", "--delay", "0", "--concurrency",
                      "2", "--out", out.string()},
                     seconds(120), -1);
    EXPECT_EQ(run.exit_code, 0) << run.err;
    EXPECT_THAT(run.out, HasSubstr("| 06_coroutines | 3 |"));
    EXPECT_THAT(run.out, ::testing::Not(HasSubstr("_tiny |")));
    EXPECT_THAT(run.err, HasSubstr("06_tiny: skipped, it has no --concurrency"));
    EXPECT_THAT(run.err, HasSubstr("04_tiny: skipped, it has no --concurrency"));
    std::filesystem::remove_all(out);
}

// On a terminal, stderr says which run of how many is going (program, N, run k of K) and for how
// long, and the clock moves on during a run (here two requests of stage 01, 0.4 s each). In a
// pipe, none of it.
TEST(CompareBinary, ShowsWhichRunAndForHowLongOnlyOnATerminal) {
    const std::filesystem::path bin = std::filesystem::path(COMPARE_BINARY).parent_path();
    if (!std::filesystem::exists(bin / "01_blocking")) {
        GTEST_SKIP() << "01_blocking is not built next to compare";
    }
    const std::filesystem::path out = std::filesystem::path(::testing::TempDir()) /
                                      ("compare_progress_" + std::to_string(getpid()));
    const std::vector<std::string> args = {"2", "--stages", "01", "--runs", "2", "--delay", "400ms",
                                           "--out", out.string()};
    sixways::conformance::ChildStreams terminal;
    terminal.stderr_on_terminal = true;
    const auto shown = sixways::conformance::run_program(COMPARE_BINARY, args, seconds(120), terminal);
    EXPECT_EQ(shown.exit_status, 0) << shown.err;
    EXPECT_THAT(shown.err, HasSubstr("[1/2] 01_blocking, N = 2, run 1 of 2, 0."));
    EXPECT_THAT(shown.err, HasSubstr("[2/2] 01_blocking, N = 2, run 2 of 2, "));
    EXPECT_THAT(shown.err, HasSubstr(" s in all)"));

    std::vector<std::string> argv = {COMPARE_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    const ChildOutcome piped = run_to_end(argv, seconds(120), -1);
    EXPECT_EQ(piped.exit_code, 0) << piped.err;
    EXPECT_THAT(piped.err, ::testing::Not(HasSubstr("[1/2]")));
    std::filesystem::remove_all(out);
}

TEST(CompareBinary, BadUsageExitsTwoAndSaysWhy) {
    ChildOutcome run = run_to_end({COMPARE_BINARY, "--stages", "07"}, seconds(30), -1);
    EXPECT_EQ(run.exit_code, 2);
    EXPECT_THAT(run.err, HasSubstr("--stages: unknown name '07'"));
    run = run_to_end({COMPARE_BINARY, "0"}, seconds(30), -1);
    EXPECT_EQ(run.exit_code, 2);
    EXPECT_THAT(run.err, HasSubstr("N must be a whole number from 1"));
}

TEST(CompareBinary, RejectsAConcurrencyThatIsNotAPositiveWholeNumber) {
    for (const char* bad : {"0", "-3", "abc", "10x", ""}) {
        ChildOutcome run = run_to_end({COMPARE_BINARY, "--concurrency", bad}, seconds(30), -1);
        EXPECT_EQ(run.exit_code, 2) << bad;
        EXPECT_THAT(run.err, HasSubstr("--concurrency")) << bad;
        EXPECT_EQ(run.out, "") << bad;  // nothing was measured
    }
    ChildOutcome run = run_to_end({COMPARE_BINARY, "--concurrency"}, seconds(30), -1);
    EXPECT_EQ(run.exit_code, 2);
    EXPECT_THAT(run.err, HasSubstr("option --concurrency needs a value"));
}

TEST(CompareBinary, RejectsAnUnknownServerARepeatedOneAndAServerWithAUrl) {
    ChildOutcome run = run_to_end({COMPARE_BINARY, "--server", "lab,apache"}, seconds(30), -1);
    EXPECT_EQ(run.exit_code, 2);
    EXPECT_THAT(run.err, HasSubstr("--server: unknown server 'apache' (known: lab, nginx)"));
    run = run_to_end({COMPARE_BINARY, "--server", "nginx,nginx"}, seconds(30), -1);
    EXPECT_EQ(run.exit_code, 2);
    EXPECT_THAT(run.err, HasSubstr("--server names nginx twice"));
    run = run_to_end({COMPARE_BINARY, "--server", "nginx", "--url", "http://127.0.0.1:1/"},
                     seconds(30), -1);
    EXPECT_EQ(run.exit_code, 2);
    EXPECT_THAT(run.err, HasSubstr("give one of them"));
}

TEST(CompareBinary, HelpNamesTheConcurrencyAndTheServer) {
    ChildOutcome run = run_to_end({COMPARE_BINARY, "--help"}, seconds(30), -1);
    EXPECT_EQ(run.exit_code, 0);
    EXPECT_THAT(run.out, HasSubstr("--concurrency C"));
    EXPECT_THAT(run.out, HasSubstr("--server"));
}

// The limit reaches the stage and the table: its heading and the CSV's last column.
TEST(CompareBinary, RunsAStageWithTheConcurrencyGiven) {
    const std::filesystem::path bin = std::filesystem::path(COMPARE_BINARY).parent_path();
    if (!std::filesystem::exists(bin / "04_callbacks")) {
        GTEST_SKIP() << "04_callbacks is not built next to compare";
    }
    const std::filesystem::path out = std::filesystem::path(::testing::TempDir()) /
                                      ("compare_concurrency_" + std::to_string(getpid()));
    std::filesystem::remove_all(out);
    ChildOutcome run = run_to_end({COMPARE_BINARY, "6", "--stages", "04", "--delay", "0",
                                   "--concurrency", "2", "--out", out.string()},
                                  seconds(120), -1);
    EXPECT_EQ(run.exit_code, 0) << run.err;
    EXPECT_THAT(run.out, HasSubstr("N times, at most 2 requests in flight"));
    EXPECT_THAT(run.out, HasSubstr("| 04_callbacks | 6 |"));
    std::ifstream csv(out / "results.csv");
    std::string header, row;
    std::getline(csv, header);
    std::getline(csv, row);
    EXPECT_THAT(header, ::testing::EndsWith(",note,concurrency,server"));
    EXPECT_THAT(row, StartsWith("04_callbacks,6,1,"));
    EXPECT_THAT(row, ::testing::EndsWith(",0,,2,lab"));
    std::filesystem::remove_all(out);
}

// The tiny versions of stages 01 to 03 are measured only when named in full ("01" is 01_blocking):
// 01_tiny one request at a time, as 01_blocking is, the other two all at once; and none under
// --concurrency, which they do not have.
TEST(CompareBinary, RunsTheTinyVersionsOf01To03OnlyWhenNamedInFull) {
    const std::filesystem::path bin = std::filesystem::path(COMPARE_BINARY).parent_path();
    for (const char* program : {"01_tiny", "02_tiny", "03_tiny", "01_blocking", "02_threads", "03_nonblocking"}) {
        if (!std::filesystem::exists(bin / program)) GTEST_SKIP() << program << " is not built next to compare";
    }
    const std::filesystem::path out = std::filesystem::path(::testing::TempDir()) /
                                      ("compare_tiny_01_03_" + std::to_string(getpid()));
    std::filesystem::remove_all(out);
    ChildOutcome run = run_to_end({COMPARE_BINARY, "3", "--stages", "01_tiny,02_tiny,03_tiny", "--delay",
                                   "0", "--out", out.string()},
                                  seconds(120), -1);
    EXPECT_EQ(run.exit_code, 0) << run.err;
    EXPECT_THAT(run.out, HasSubstr("| 01_tiny | 3 |"));
    EXPECT_THAT(run.out, HasSubstr("| 02_tiny | 3 |"));
    EXPECT_THAT(run.out, HasSubstr("| 03_tiny | 3 |"));
    EXPECT_THAT(run.out, ::testing::Not(HasSubstr("| 01_blocking |")));
    std::ifstream csv(out / "results.csv");
    std::string header, first, second, third;
    std::getline(csv, header);
    std::getline(csv, first);
    std::getline(csv, second);
    std::getline(csv, third);
    EXPECT_THAT(first, StartsWith("01_tiny,3,1,"));
    EXPECT_THAT(first, ::testing::EndsWith(",0,,1,lab")) << "one at a time";
    EXPECT_THAT(second, StartsWith("02_tiny,3,1,"));
    EXPECT_THAT(second, ::testing::EndsWith(",0,,3,lab")) << "all at once";
    EXPECT_THAT(third, StartsWith("03_tiny,3,1,"));
    EXPECT_THAT(third, ::testing::EndsWith(",0,,3,lab")) << "all at once";

    run = run_to_end({COMPARE_BINARY, "3", "--stages", "01,02,03", "--delay", "0", "--out", out.string()},
                     seconds(120), -1);
    EXPECT_EQ(run.exit_code, 0) << run.err;
    EXPECT_THAT(run.out, HasSubstr("| 03_nonblocking | 3 |"));
    EXPECT_THAT(run.out, ::testing::Not(HasSubstr("_tiny")));

    run = run_to_end({COMPARE_BINARY, "3", "--stages", "01,01_tiny,02_tiny,03_tiny", "--delay", "0",
                      "--concurrency", "2", "--out", out.string()},
                     seconds(120), -1);
    EXPECT_EQ(run.exit_code, 0) << run.err;
    EXPECT_THAT(run.out, HasSubstr("| 01_blocking | 3 |"));
    EXPECT_THAT(run.out, ::testing::Not(HasSubstr("_tiny |")));
    for (const char* tiny : {"01_tiny", "02_tiny", "03_tiny"}) {
        EXPECT_THAT(run.err, HasSubstr(std::string(tiny) + ": skipped, it has no --concurrency"));
    }
    std::filesystem::remove_all(out);
}

// --peers adds ab and aiohttp to what --stages picked: each is measured, or named as not installed.
TEST(CompareBinary, AddsThePeersToTheStagesPicked) {
    const std::filesystem::path bin = std::filesystem::path(COMPARE_BINARY).parent_path();
    if (!std::filesystem::exists(bin / "04_callbacks")) {
        GTEST_SKIP() << "04_callbacks is not built next to compare";
    }
    const std::filesystem::path out = std::filesystem::path(::testing::TempDir()) /
                                      ("compare_peers_" + std::to_string(getpid()));
    ChildOutcome run = run_to_end({COMPARE_BINARY, "2", "--stages", "04", "--peers", "--delay",
                                   "0", "--out", out.string()},
                                  seconds(120), -1);
    EXPECT_THAT(run.out, HasSubstr("| 04_callbacks | 2 |"));
    EXPECT_THAT(run.out, ::testing::AnyOf(HasSubstr("| ab (ApacheBench) | 2 |"),
                                          HasSubstr("Not measured: ab: skipped")));
    EXPECT_THAT(run.out, ::testing::AnyOf(HasSubstr("| aiohttp (Python asyncio) | 2 |"),
                                          HasSubstr("Not measured: aiohttp: skipped")));
    std::filesystem::remove_all(out);
}

// ---- nginx in place of the lab server ----

NginxSettings sample_settings() {
    NginxSettings settings;
    settings.prefix = "/tmp/x/";
    settings.echo_module = "/m/ngx_http_echo_module.so";
    settings.port = 8123;
    settings.delay = milliseconds(100);
    settings.open_files = 20000;
    settings.backlog = 4096;
    return settings;
}

TEST(NginxConfig, FillsEveryPlaceholderAndLeavesNginxsOwnAtSignsAlone) {
    EXPECT_EQ(nginx_config("pid @PREFIX@nginx.pid; listen 127.0.0.1:@PORT@ backlog=@BACKLOG@;\n"
                           "@ECHO_SLEEP@ echo_exec @body; a@b @ @@\n"
                           "worker_rlimit_nofile @OPEN_FILES@; worker_connections "
                           "@WORKER_CONNECTIONS@; load_module @ECHO_MODULE@;",
                           sample_settings()),
              "pid /tmp/x/nginx.pid; listen 127.0.0.1:8123 backlog=4096;\n"
              "echo_sleep 0.100; echo_exec @body; a@b @ @@\n"
              "worker_rlimit_nofile 20000; worker_connections 19968; "
              "load_module /m/ngx_http_echo_module.so;");
}

TEST(NginxConfig, SleepsTheDelayInSecondsAndNotAtAllWithoutOne) {
    NginxSettings settings = sample_settings();
    settings.delay = milliseconds(2500);
    EXPECT_EQ(nginx_config("@ECHO_SLEEP@", settings), "echo_sleep 2.500;");
    settings.delay = {};
    EXPECT_EQ(nginx_config("@ECHO_SLEEP@", settings), "");
}

TEST(NginxConfig, RejectsAnUnknownPlaceholder) {
    EXPECT_THROW(nginx_config("listen @PROT@;", sample_settings()), std::runtime_error);
}

TEST(NginxConfig, TheTemplateRunsOneWorkerWithoutAccessLogAndLeavesNoPlaceholder) {
    std::ifstream file(NGINX_CONFIG_TEMPLATE);
    ASSERT_TRUE(file.is_open()) << NGINX_CONFIG_TEMPLATE;
    std::stringstream text;
    text << file.rdbuf();
    std::string config = nginx_config(text.str(), sample_settings());
    EXPECT_THAT(config, HasSubstr("\nworker_processes 1;"));
    EXPECT_THAT(config, HasSubstr("\ndaemon off;"));
    EXPECT_THAT(config, HasSubstr("access_log off;"));
    EXPECT_THAT(config, HasSubstr("load_module /m/ngx_http_echo_module.so;"));
    EXPECT_THAT(config, HasSubstr("listen 127.0.0.1:8123 backlog=4096;"));
    EXPECT_THAT(config, HasSubstr("echo_sleep 0.100;"));
    EXPECT_THAT(config, HasSubstr("worker_rlimit_nofile 20000;"));
    EXPECT_EQ(config.find("@PREFIX@"), std::string::npos);
    EXPECT_EQ(config.find("/tmp/x/nginx.pid"), config.find("/tmp/x/"));  // the first use: pid
}

std::uint16_t port_of(const std::string& url) {
    // "http://127.0.0.1:PORT/"
    std::size_t colon = url.rfind(':');
    return static_cast<std::uint16_t>(std::stoi(url.substr(colon + 1)));
}

TEST(NginxProcess, AnswersTheDelayedPathLikeTheLabServerAndIsGoneAfterStop) {
    NginxInstall install = find_nginx();
    if (!install.problem.empty()) {
        GTEST_SKIP() << install.problem;
    }
    NginxProcess nginx(install, NGINX_CONFIG_TEMPLATE, milliseconds(50));
    EXPECT_THAT(nginx.url(), StartsWith("http://127.0.0.1:"));
    const std::uint16_t port = port_of(nginx.url());

    test::Reply reply = test::fetch(port, "/");
    EXPECT_EQ(reply.status, 200) << reply.error;
    EXPECT_EQ(reply.header("content-length"), "100");
    EXPECT_EQ(reply.header("connection"), "close");
    EXPECT_EQ(reply.header("content-type"), "text/plain; charset=utf-8");
    EXPECT_FALSE(reply.header("x-request-id").empty());
    EXPECT_FALSE(reply.chunked);
    EXPECT_EQ(reply.body.size(), 100u);
    EXPECT_THAT(reply.body, StartsWith("path=/ server=nginx\n"));
    EXPECT_EQ(test::fetch(port, "/status/204").status, 204);

    nginx.stop();
    test::Reply after = test::fetch(port, "/status/204");
    EXPECT_EQ(after.status, 0) << "nginx still answers on port " << port;
    nginx.stop();  // twice is harmless
}

TEST(NginxProcess, AnswersTheSameWayWithoutADelay) {
    NginxInstall install = find_nginx();
    if (!install.problem.empty()) {
        GTEST_SKIP() << install.problem;
    }
    NginxProcess nginx(install, NGINX_CONFIG_TEMPLATE, Duration::zero());
    test::Reply reply = test::fetch(port_of(nginx.url()), "/");
    EXPECT_EQ(reply.status, 200) << reply.error;
    EXPECT_EQ(reply.header("content-length"), "100");
    EXPECT_EQ(reply.body.size(), 100u);
}

TEST(NginxProcess, SaysWhyWhenNginxCannotStart) {
    NginxInstall install = find_nginx();
    if (!install.problem.empty()) {
        GTEST_SKIP() << install.problem;
    }
    install.echo_module = "/nonexistent/ngx_http_echo_module.so";
    try {
        NginxProcess nginx(install, NGINX_CONFIG_TEMPLATE, milliseconds(50));
        ADD_FAILURE() << "nginx started without its echo module";
    } catch (const std::runtime_error& error) {
        EXPECT_THAT(error.what(), HasSubstr("nginx did not start"));
        EXPECT_THAT(error.what(), HasSubstr("/nonexistent/ngx_http_echo_module.so"));
    }
}

// Both servers, one table: each row says which server it went to.
TEST(CompareBinary, MeasuresAStageAgainstTheLabServerAndNginx) {
    const std::filesystem::path bin = std::filesystem::path(COMPARE_BINARY).parent_path();
    NginxInstall install = find_nginx();
    if (!install.problem.empty()) {
        GTEST_SKIP() << install.problem;
    }
    if (!std::filesystem::exists(bin / "04_callbacks")) {
        GTEST_SKIP() << "04_callbacks is not built next to compare";
    }
    const std::filesystem::path out = std::filesystem::path(::testing::TempDir()) /
                                      ("compare_nginx_" + std::to_string(getpid()));
    std::filesystem::remove_all(out);
    ChildOutcome run = run_to_end({COMPARE_BINARY, "3", "--stages", "04", "--server", "lab,nginx",
                                   "--delay", "10ms", "--out", out.string()},
                                  seconds(120), -1);
    EXPECT_EQ(run.exit_code, 0) << run.err;
    EXPECT_THAT(run.out, HasSubstr("the lab server and nginx (one worker process) answered each "
                                   "after 10 ms"));
    EXPECT_THAT(run.out,
                ::testing::ContainsRegex("\\| 04_callbacks @ lab \\| 3 \\|.*\\| 0 \\|  \\|"));
    EXPECT_THAT(run.out,
                ::testing::ContainsRegex("\\| 04_callbacks @ nginx \\| 3 \\|.*\\| 0 \\|  \\|"));
    std::ifstream csv(out / "results.csv");
    std::string header, lab, nginx;
    std::getline(csv, header);
    std::getline(csv, lab);
    std::getline(csv, nginx);
    EXPECT_THAT(lab, StartsWith("04_callbacks @ lab,3,1,"));
    EXPECT_THAT(lab, ::testing::EndsWith(",lab"));
    EXPECT_THAT(nginx, ::testing::EndsWith(",nginx"));
    std::filesystem::remove_all(out);
}

}  // namespace
}  // namespace sixways::lab
