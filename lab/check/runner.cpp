// The learner's checker: runs every check of a level against one file and prints the checklist.
//
//   check_NN [--real] [--only NAME]   each check in a process of its own, then the checklist
//   check_NN --run TEST               one check (a GoogleTest case), in this process
//
// Each check runs in a child process (this program again, with --run), so that a file that
// crashes fails that check alone, and a file that hangs is killed after a bound and reported as
// hanging, instead of taking the whole run with it. The checklist line of a check is `[ok] name`,
// or `[FAIL] name: expected ..., got ...; hint: ...; reproduce: ...`, where "got" is what the
// check saw (its first failed assertion), and the hint names the classic mistake behind such a
// failure, when there is one. Exit status: 0 every check passed, 1 one failed, 2 bad usage.
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "lab/check/check.hpp"
#include "tests/child_process.hpp"

namespace {

using namespace std::chrono_literals;

// What the checklist says about one check. In `reproduce`, BIN stands for the file's binary, LAB
// for the lab server's, and CHECK for the command that runs this one check again.
struct CheckInfo {
    const char* suite;    // the GoogleTest suite: "ConformanceCore", "StageChecks", "Conformance"
    const char* test;     // the case's name in it
    const char* name;     // the check's stable name, as the checklist prints it
    int first_stage;      // the first stage it applies to
    const char* expected;
    const char* hint;
    const char* mistake;  // the classic mistake its failure points to, or ""
    const char* reproduce;
    // What a failure must say for the mistake to be named: a check that fails for another reason
    // (nothing connected at all, say) does not point to it.
    const char* evidence = "";
};

constexpr const char* command_line_hint =
    "the command line is common/cli.cpp, which calls your fetch_all: look for a crash, an exception "
    "or a hang in fetch_all, or for something your file prints on stdout";

// In the order the checklist prints them: what a stage is about first, then the answers, then the
// command line.
const CheckInfo checks[] = {
    {"StageChecks", "HasRequestsInFlightAtOnce", "requests-in-flight-at-once", 2,
     "5 requests in flight at the same time (the --json report's \"concurrency\" above 1)",
     "start every request before waiting for any (stage 02: a thread each, all started before the first "
     "join; from stage 03 on: every request's socket in the one loop from the start)", "",
     "with `LAB --port 0` running and URL its address: BIN 5 --url \"$URL\" --json"},
    {"StageChecks", "MakesEverySocketNonBlocking", "sockets-never-block", 3,
     "every socket to the server in non-blocking mode (O_NONBLOCK) while the server thinks",
     "open each socket with SOCK_NONBLOCK: socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)", "",
     "with `LAB --port 0` running and URL its address: BIN 3 --url \"${URL}delay/3000\" & sleep 1; "
     "grep flags /proc/$!/fdinfo/*  (O_NONBLOCK is the 04000 bit)"},
    {"StageChecks", "GoesOnWhileOneResponseIsHalfThere", "loop-never-stalls", 3,
     "request 1 answered while request 0's server holds back the rest of its response",
     "never wait inside the loop's work: one recv() when the socket is readable, then back to the loop; "
     "EAGAIN means later, not again now; a blocking recv() (or one retried at once) holds up every other request",
     "blocking-call-stalls-the-loop", "CHECK", "the loop waited on request 0"},
    {"StageChecks", "SleepsWhileTheServerThinks", "loop-sleeps-while-waiting", 4,
     "at most 30 epoll_wait calls for 3 requests to a server that thinks for 300 ms",
     "once a socket is connected and the request sent, stop watching it for writable (EPOLLOUT): it stays "
     "writable, so epoll_wait returns at once on every turn and the loop spins",
     "writer-never-removed",
     "with `LAB --port 0` running and URL its address: BIN 3 --url \"${URL}delay/3000\" (a report's cpu near its "
     "wall time means a spinning loop)",
     "times for 3 requests"},
    {"StageChecks", "SendsALongRequestWhole", "long-request-sent-whole", 1,
     "a 16 MB request (a long path) received whole by the server",
     "send() may take only part of the bytes: add what it returns to a count and send the rest, in a loop "
     "(on a non-blocking socket: once it is writable again)",
     "partial-send-not-continued", "CHECK", "then nothing more"},
    {"StageChecks", "LeavesNoDescriptorOpen", "no-descriptor-left-open", 1,
     "as many descriptors open after fetch_all as before (5 requests: good, refused, cut short)",
     "close each socket on every way out, errors included: a Descriptor (common/descriptor.hpp) closes "
     "itself when it goes out of scope",
     "socket-never-closed", "CHECK", "after it returned"},

    {"StageChecks", "StampsEachPhaseInOrder", "phases-stamped-in-order", 1,
     "each request's timing stamped at every phase: start <= connected <= sent <= first_byte <= done",
     "set result.timing.connected, .sent, .first_byte and .done (Clock::now()) as each happens: the "
     "report's latency and --trace's phases are drawn from them",
     "", "with `LAB --port 0` running and URL its address: BIN 3 --url \"$URL\" --trace t.json; "
     "build/bin/compare --timeline t.json (a phase missing from the picture is a stamp left unset)"},

    {"ConformanceCore", "ReturnsEachPathsOwnBodyWithAllRequestsInFlight", "each-request-its-own-body", 1,
     "50 requests, each answered with its own path's body, once, in request order",
     "keep each request's state apart (its own socket, parser and Result) and put request k's result in "
     "slot k",
     "", "with `LAB --port 0` running and URL its address: BIN 50 --url \"${URL}distinct\" --json"},
    {"ConformanceCore", "ReturnsNoResultsAndMakesNoConnectionForNoRequests", "no-requests-no-connection", 1,
     "no result and no connection for an empty list of requests", "connect only for a request there is", "",
     "with `LAB --port 0` running and URL its address: BIN 0 --url \"$URL\" --json"},
    {"ConformanceCore", "ReceivesAThreeMegabyteBodyComplete", "large-body-read-to-its-end", 1,
     "a body of 3000000 bytes, complete and in order",
     "one recv() returns only what has arrived so far: call it again, feeding each piece to the "
     "ResponseParser, until the parser says the response is complete",
     "one-recv-is-not-a-response",
     "with `LAB --port 0` running and URL its address: BIN 1 --url \"${URL}bytes/3000000\" --json", "body_bytes"},
    {"ConformanceCore", "DecodesChunkedBodiesOfAnySize", "chunked-bodies", 1,
     "chunked bodies of 0, 1 and 100000 bytes, decoded",
     "feed every piece that recv() returns to the ResponseParser and take its response: it decodes the chunks",
     "", "with `LAB --port 0` running and URL its address: BIN 1 --url \"${URL}chunked/100000\" --json"},
    {"ConformanceCore", "ReadsABodyThatEndsWhenTheServerCloses", "body-ended-by-close", 1,
     "a body with no length, complete when the server closes the connection",
     "when recv() returns 0, call parser.finish(): the end of the stream completes a body framed by the close",
     "", "CHECK"},
    {"ConformanceCore", "ReportsAResponseCutShortAsAReceiveError", "cut-short-is-a-receive-error", 1,
     "a `receive` error, at once, when the server closes or resets before the response is complete",
     "when recv() returns 0, the server has closed: call parser.finish(), which says whether the close "
     "completes the response (a body framed by the close) or cuts it short (error: a `receive` error, with "
     "parser.error()); recv() failing (ECONNRESET) is a `receive` error too",
     "", "with `LAB --port 0` running and URL its address: BIN 1 --url \"${URL}fault/close\" "
     "(and /fault/partial-headers, /fault/short-body, /fault/reset)"},
    {"ConformanceCore", "ReportsARefusedConnectionAsAConnectError", "refused-is-a-connect-error", 1,
     "a `connect` error that says \"Connection refused\"",
     "a connect() that fails (or SO_ERROR, after a non-blocking one) is the request's `connect` error: "
     "errno_message(\"connect\", error)",
     "", "BIN 1 --url http://127.0.0.1:9/"},
    {"ConformanceCore", "CommandLineRejectsBadUrlsWithoutSendingAnything", "command-line-bad-urls", 1,
     "exit status 2 and no connection for bad URLs", command_line_hint, "", "BIN 3 --url https://x/"},
    {"ConformanceCore", "CommandLineRejectsBadRequestCounts", "command-line-bad-counts", 1,
     "exit status 2 and no connection for N = -3, abc, 99999999999999999999999", command_line_hint, "",
     "BIN -3"},
    {"ConformanceCore", "CommandLineHelpPrintsUsageOnStdout", "command-line-help", 1, "--help prints the usage",
     command_line_hint, "", "BIN --help"},
    {"ConformanceCore", "CommandLineWithZeroRequestsMakesNoConnection", "command-line-zero-requests", 1,
     "N = 0 makes no connection", command_line_hint, "",
     "with `LAB --port 0` running and URL its address: BIN 0 --url \"$URL\" --json"},
    {"ConformanceCore", "CommandLinePrintsOneLineReport", "command-line-report", 1,
     "one line of report on stdout, exit status 0", command_line_hint, "",
     "with `LAB --port 0` running and URL its address: BIN 5 --url \"$URL\""},
    {"ConformanceCore", "CommandLineJsonReportIsOneObjectWithEveryKey", "command-line-json", 1,
     "--json: one object, 20 ok of 20", command_line_hint, "",
     "with `LAB --port 0` running and URL its address: BIN 20 --url \"${URL}cli\" --json"},
    {"ConformanceCore", "CommandLineExitsOneAndCountsConnectErrorsWhenRefused", "command-line-refused", 1,
     "exit status 1 and 3 connect errors for a port where nothing listens", command_line_hint, "",
     "BIN 3 --url http://127.0.0.1:9/ --json"},
    {"ConformanceCore", "CommandLineWithStdoutClosedKeepsTheTraceFileJson", "command-line-stdout-closed", 1,
     "with stdout closed, a --trace file that is JSON", command_line_hint, "",
     "with `LAB --port 0` running and URL its address: BIN 3 --url \"$URL\" --trace t.json >&-"},
    {"ConformanceCore", "CommandLineWithStderrClosedKeepsTheTraceFileJson", "command-line-stderr-closed", 1,
     "with stderr closed, a --trace file that is JSON", command_line_hint, "",
     "BIN 3 --url http://127.0.0.1:9/ --trace t.json 2>&-"},
    {"ConformanceCore", "CommandLineWithEveryStandardStreamClosedFetchesAndTraces", "command-line-streams-closed",
     1, "with every standard stream closed, 3 requests and a --trace file", command_line_hint, "",
     "with `LAB --port 0` running and URL its address: BIN 3 --url \"$URL\" --trace t.json <&- >&- 2>&-"},
    {"ConformanceCore", "CommandLineRunsWithoutItsCtrlCThreadWhenNoThreadIsLeft", "command-line-no-thread-left",
     1, "a run with no thread to spare for Ctrl-C", command_line_hint, "", "CHECK"},
    {"ConformanceCore", "CommandLineShowsProgressOnATerminal", "command-line-progress", 1,
     "progress on a terminal's stderr", command_line_hint, "",
     "with `LAB --port 0 --delay 1s` running and URL its address: BIN 2 --url \"$URL\""},
    {"ConformanceCore", "CommandLineShowsNoProgressWithJsonOrOffATerminal", "command-line-no-progress", 1,
     "no progress with --json or in a pipe", command_line_hint, "",
     "with `LAB --port 0` running and URL its address: BIN 2 --url \"$URL\" --json"},
};

// Each check of the level, with its GoogleTest name; a case that the table does not know (one
// added to the suite since, or one of --real's) comes last, under its own name.
struct Planned {
    CheckInfo info;
    std::string name;  // info.name, or the case's own name in kebab case
    std::string test;  // "Check/ConformanceCore.ReceivesAThreeMegabyteBodyComplete/01_tiny"
};

// "ReturnsARedirectWithoutFollowingIt" -> "returns-a-redirect-without-following-it", for a case that
// the table does not name.
std::string kebab_case(const std::string& name) {
    std::string kebab;
    for (char c : name) {
        if (c >= 'A' && c <= 'Z') {
            if (!kebab.empty()) kebab += '-';
            kebab += static_cast<char>(c - 'A' + 'a');
        } else {
            kebab += c;
        }
    }
    return kebab;
}

// The cases this program holds, as {suite, test}: {"Check/ConformanceCore",
// "ReceivesAThreeMegabyteBodyComplete/01_tiny"}.
std::vector<std::pair<std::string, std::string>> registered_cases() {
    std::vector<std::pair<std::string, std::string>> cases;
    const testing::UnitTest& unit = *testing::UnitTest::GetInstance();
    for (int s = 0; s < unit.total_test_suite_count(); ++s) {
        const testing::TestSuite& suite = *unit.GetTestSuite(s);
        for (int t = 0; t < suite.total_test_count(); ++t) {
            cases.emplace_back(suite.name(), suite.GetTestInfo(t)->name());
        }
    }
    return cases;
}

std::vector<Planned> plan(bool real) {
    const std::vector<std::pair<std::string, std::string>> cases = registered_cases();
    std::vector<bool> known(cases.size(), false);
    std::vector<Planned> planned;
    for (const CheckInfo& info : checks) {
        for (std::size_t k = 0; k < cases.size(); ++k) {
            const bool match = cases[k].first.ends_with("/" + std::string(info.suite)) &&
                               cases[k].second.starts_with(std::string(info.test) + "/");
            if (!match) continue;
            known[k] = true;
            if (checked_stage.number >= info.first_stage) {
                planned.push_back({info, info.name, cases[k].first + "." + cases[k].second});
            }
        }
    }
    for (std::size_t k = 0; k < cases.size(); ++k) {
        const bool core = cases[k].first.ends_with("/ConformanceCore");
        if (known[k] || (!core && !real)) continue;
        const std::string& test = cases[k].second;
        const CheckInfo info{"", "", "", 1,
                             core ? "what the core conformance case in tests/conformance_core.cpp checks"
                                  : "what a full stage does (the case in tests/conformance.cpp)",
                             core ? "read the case in tests/conformance_core.cpp"
                                  : "a full stage keeps a deadline per request (options.timeout), keeps at most "
                                    "options.concurrency requests in flight, and tries each address in turn; "
                                    "read the case in tests/conformance.cpp",
                             "", "CHECK"};
        planned.push_back({info, kebab_case(test.substr(0, test.find('/'))), cases[k].first + "." + test});
    }
    return planned;
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
    for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
        text.replace(at, from.size(), to);
    }
    return text;
}

// What a check's process saw: the lines it printed after these markers (see FailureReporter).
constexpr const char* failure_marker = "check failure: ";
constexpr const char* skip_marker = "check skipped: ";

std::vector<std::string> lines_after(const std::string& output, const std::string& marker) {
    std::vector<std::string> found;
    for (std::size_t at = output.find(marker); at != std::string::npos; at = output.find(marker, at + 1)) {
        const std::size_t start = at + marker.size();
        found.push_back(output.substr(start, output.find('\n', start) - start));
    }
    return found;
}

// Prints each failed assertion of the check on one line of stdout, after a marker, and nothing else
// of GoogleTest's (the checklist is the report).
class FailureReporter : public testing::EmptyTestEventListener {
    void OnTestPartResult(const testing::TestPartResult& result) override {
        if (result.passed()) return;
        std::string text = result.message();
        if (text.starts_with("Failed\n")) text.erase(0, 7);  // ADD_FAILURE() and FAIL() say only that first
        for (char& c : text) {
            if (c == '\n') c = ' ';
        }
        const std::string trace = "Google Test trace: ";  // then "file:line: " and what was traced
        for (std::size_t at = text.find(trace); at != std::string::npos; at = text.find(trace, at)) {
            const std::size_t colon = text.find(": ", at + trace.size());
            if (colon == std::string::npos) break;
            text.replace(at, colon + 2 - at, "while checking ");
        }
        std::string single;  // runs of spaces made one
        for (char c : text) {
            if (c != ' ' || single.empty() || single.back() != ' ') single += c;
        }
        std::printf("%s%s\n", result.skipped() ? skip_marker : failure_marker, single.c_str());
        std::fflush(stdout);
    }
};

int run_one(char* program, const std::string& test) {
    std::string filter = "--gtest_filter=" + test;
    // As main's argv: its last element null. InitGoogleTest moves the null along when it takes
    // out the flag it reads.
    char* args[] = {program, filter.data(), nullptr};
    int count = 2;
    testing::InitGoogleTest(&count, args);
    testing::TestEventListeners& listeners = testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailureReporter);
    return RUN_ALL_TESTS();
}

std::string self_path() {
    char path[4096];
    const ssize_t n = ::readlink("/proc/self/exe", path, sizeof path - 1);
    return n > 0 ? std::string(path, static_cast<std::size_t>(n)) : "";
}

int usage(const char* program, const std::string& problem) {
    std::cerr << program << ": " << problem << "\nusage: " << program << " [--real] [--only NAME]\n";
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc == 3 && std::strcmp(argv[1], "--run") == 0) return run_one(argv[0], argv[2]);

    bool real = false;
    std::string only;
    std::string check_command = argv[0];  // how to run one check again: lab/check.sh gives its own
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--real") real = true;
        else if (arg == "--only" && i + 1 < argc) only = argv[++i];
        else if (arg == "--command" && i + 1 < argc) check_command = argv[++i];
        else return usage(argv[0], "unknown argument '" + arg + "'");
    }
    char* no_flags[] = {argv[0], nullptr};
    int count = 1;
    testing::InitGoogleTest(&count, no_flags);  // registers the cases, to be listed; runs none
    std::vector<Planned> planned = plan(real);
    if (!only.empty()) {
        std::erase_if(planned, [&](const Planned& p) { return p.name != only; });
        if (planned.empty()) return usage(argv[0], "no check named '" + only + "' at this level");
    }

    const std::string self = self_path();
    const sixways::Duration bound = 20s;  // every check ends in a few seconds unless the file hangs
    bool failed = false;
    bool hung = false;
    for (const Planned& check : planned) {
        const CheckInfo& info = check.info;
        if (hung) {
            std::cout << "[--] " << check.name << ": not run, after a check that hung\n" << std::flush;
            continue;
        }
        const auto output = sixways::conformance::run_program(self, {"--run", check.test}, bound);
        const std::vector<std::string> failures = lines_after(output.out, failure_marker);
        const std::vector<std::string> skips = lines_after(output.out, skip_marker);
        if (output.exit_status == 0 && failures.empty()) {
            if (skips.empty()) std::cout << "[ok] " << check.name << "\n" << std::flush;
            else std::cout << "[skip] " << check.name << ": " << skips[0] << "\n" << std::flush;
            continue;
        }
        failed = true;
        std::string got;
        std::string mistake;
        if (output.killed) {
            hung = true;
            got = "no result within 20 s: it hangs (killed)";
            // A case of the full suite may wait for a server that never answers, which only a
            // deadline ends. Elsewhere, in stage 06, a fetch that never ends is a coroutine that
            // nobody resumes.
            const bool full_stage_case = check.test.find("/Conformance.") != std::string::npos;
            if (checked_stage.number == 6 && !full_stage_case) mistake = "coroutine-never-resumed";
        } else if (!failures.empty()) {
            got = failures[0];
            if (failures.size() > 1) got += " (and " + std::to_string(failures.size() - 1) + " more)";
            if (*info.mistake != '\0' && got.find(info.evidence) != std::string::npos) mistake = info.mistake;
        } else {
            got = "the check's process ended with status " + std::to_string(output.exit_status) +
                  (output.exit_status > 128 ? " (killed by signal " + std::to_string(output.exit_status - 128) +
                                                  ": a crash)"
                                            : "");
            const std::string err = output.err.substr(0, 300);
            if (!err.empty()) got += ": " + replaced(err, "\n", " ");
        }
        // A coroutine that nobody resumes leaves tiny's loop with nothing to watch and a task unfinished,
        // whose result is then read: std::optional's "bad optional access".
        if (checked_stage.number == 6 && got.find("bad optional access") != std::string::npos) {
            mistake = "coroutine-never-resumed";
        }
        std::string hint = info.hint;
        if (mistake == "coroutine-never-resumed") {
            hint = "a coroutine suspended on a pending Future runs again only if the Future's done callback "
                   "schedules its task's step: await_suspend must register it, set_result must schedule it";
        }
        // A loop that never reached epoll_wait did not spin on a writer left watched: its waits
        // never handed control back to it.
        if (got.find("never called epoll_wait") != std::string::npos) {
            hint = "after EAGAIN or EINPROGRESS, hand control back to the loop (return, co_yield, co_await) so "
                   "that it sleeps in epoll_wait; a wait that does not suspend (await_ready() true) makes the "
                   "fetch try the call again at once, and spin";
        }
        std::string reproduce = replaced(info.reproduce, "CHECK",
                                         check_command + (real ? " --real" : "") + " --only " + check.name);
        reproduce = replaced(reproduce, "BIN", checked_stage.stage.binary);
        reproduce = replaced(reproduce, "LAB", checked_stage.labserver);
        std::cout << "[FAIL] " << check.name << ": expected " << info.expected << ", got " << got << "; hint: "
                  << (mistake.empty() ? "" : "mistake " + mistake + ": ") << hint << "; reproduce: " << reproduce
                  << "\n"
                  << std::flush;
    }
    return failed ? 1 : 0;
}
