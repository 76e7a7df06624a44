// What the two levels of the conformance suite share (conformance_core.cpp and conformance.cpp):
// requests for the lab server, a fetch under a watchdog, the suite's own view of what the lab
// server sends, and the helpers of the command-line cases.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/duration.hpp"
#include "common/fetch.hpp"
#include "common/json_reader.hpp"
#include "lab/labserver.hpp"
#include "tests/child_process.hpp"
#include "tests/conformance.hpp"

namespace sixways::conformance {

// ---- The lab server and the requests ----

// A request for `path` on the lab server, resolved up front as the command line does.
Request request_for(const lab::LabServer& server, const std::string& path);

// counts[key], or 0 when the key is missing.
std::uint64_t count_of(const std::map<std::string, std::uint64_t>& counts, const std::string& key);

// For failure messages: "200, 10000 body bytes" or "receive error: connection closed after ...".
std::string describe(const Result& result);

// A loopback port with nothing listening: bound to find a free one, then closed again.
std::uint16_t port_with_nothing_listening();

// The whole connection's bytes for one GET, read with a plain socket until the server closes it.
// The suite's independent view of what the lab server sends; also a sentinel: once it has been
// answered, every connection made before it has been accepted (one listening socket accepts in
// order), so stats() can be trusted to show them.
std::string raw_get(const lab::LabServer& server, const std::string& path);

// What follows the head of a raw response.
std::string body_of(const std::string& raw_response);

// A lab body's first line echoes the request ("path=/bytes/10 id=7"), so it differs between two
// fetches of one path; the text after it is the same every time.
std::string_view first_line(std::string_view body);
std::string_view after_first_line(std::string_view body);

// Compares two large bodies without printing megabytes: "" when equal, else where they differ.
std::string first_difference(std::string_view got, std::string_view expected);

// Calls the stage's fetch_all under a watchdog: a fetcher that never returns would otherwise hang
// the whole test binary. No case's fetch_all should take more than a few seconds, even under a
// sanitizer; the watchdog waits a minute.
std::vector<Result> fetch(const StageUnderTest& stage, const std::vector<Request>& requests,
                          const Options& options);

// For checks that a result came before its deadline; in milliseconds so a failure reads well.
double elapsed_ms(const Result& result);
double in_ms(Duration duration);

// Fetches /distinct/K?x=K for K < count, `concurrency` at a time (0: all at once), and checks
// everything a mix-up, a loss or a duplicate would break. Returns the results for further checks.
std::vector<Result> check_distinct_paths(const StageUnderTest& stage, std::size_t count,
                                         std::size_t concurrency);

// ---- The command-line cases ----

// Runs the stage's binary with `args`, for at most 20 s.
ChildOutput run_cli(const StageUnderTest& stage, const std::vector<std::string>& args);

// "3 --url http://..." for failure messages.
std::string joined(const std::vector<std::string>& args);

// Parses stdout as exactly one JSON object; records a failure and returns a null Json if it is not.
Json json_report(const ChildOutput& output);

// object[key] as a number; records a failure and returns -1 if there is none.
double number_in(const Json& object, const std::string& key);

// The whole contents of a file ("" if it cannot be read).
std::string contents_of(const std::string& path);

// Whether /usr/bin/prlimit (util-linux) is there, to run a binary under a lower limit.
bool has_prlimit();

// How many times `part` occurs in `text`.
std::size_t occurrences(const std::string& text, const std::string& part);

}  // namespace sixways::conformance
