// compare: runs every stage (and, with --peers, programs from outside the project) against a lab
// server for each N, and prints the table the chapters quote.
//
//   compare [N ...] [--delay 100ms] [--concurrency C] [--stages 01,04,...] [--url URL]
//           [--server lab,nginx] [--peers] [--runs K] [--out DIR]
//   compare --timeline TRACE.json [-o OUT.svg]
//
// The arithmetic and the output are in compare.cpp and compare_plot.cpp; the processes in
// compare_process.cpp; this file is the command line and the loop over runs.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/duration.hpp"
#include "common/json_reader.hpp"
#include "common/standard_streams.hpp"
#include "common/url.hpp"
#include "lab/compare.hpp"
#include "lab/compare_process.hpp"
#include "lab/timeline.hpp"

namespace {

using sixways::Duration;
using sixways::lab::ChildOutcome;
using sixways::lab::executable;
using sixways::lab::on_path;
using sixways::lab::Program;
using sixways::lab::RunReport;
using sixways::lab::Row;

constexpr const char* usage =
    "usage: compare [N ...] [--delay DURATION] [--concurrency C] [--stages LIST] [--url URL]\n"
    "               [--server lab,nginx] [--peers] [--runs K] [--out DIR]\n"
    "       compare --timeline TRACE.json [-o OUT.svg]\n"
    "\n"
    "Starts a lab server (labserver, next to this program) on a free port, runs each stage with\n"
    "--json for every N, all requests at once (or C at a time), and prints a Markdown table: wall\n"
    "time, CPU time, peak memory, requests per second, latency p50/p99 and failures per program\n"
    "and N. Writes results.csv and results.svg (wall time against N, log-log) into DIR.\n"
    "\n"
    "  N ...             request counts (default 10 100 1000 10000)\n"
    "  --delay DURATION  the server's delay before each answer: 2, 2.5s, 250ms (default 100ms)\n"
    "  --concurrency C   at most C requests in flight in every program (stages, yardstick and\n"
    "                    aiohttp get --concurrency C, ab gets -c C); default: all N at once\n"
    "  --stages LIST     which programs, comma-separated: 01 ... 06 (or full names), 01_tiny\n"
    "                    ... 06_tiny, yardstick, aiohttp, ab (default: the six stages and the\n"
    "                    yardstick, if built; a stage's tiny version only when named in full)\n"
    "  --url URL         measure against this server instead of starting one; --delay then only\n"
    "                    estimates how long stage 01 would take\n"
    "  --server LIST     the servers to start: lab (the default), nginx, or lab,nginx to measure\n"
    "                    against both, interleaved. nginx checks that the lab server is not what\n"
    "                    limits the figures: one worker process (lab/peers/nginx.conf.in)\n"
    "                    answering / after --delay with a 100-byte body like the lab server's;\n"
    "                    needs nginx and libnginx-mod-http-echo\n"
    "  --peers           add Python's asyncio + aiohttp (lab/peers/aiohttp_fetch.py) and\n"
    "                    ApacheBench (ab), when installed, to the programs --stages picks\n"
    "  --runs K          run everything K times, interleaved, and show medians (default 1)\n"
    "  --out DIR         where results.csv and results.svg go (default: the current directory)\n"
    "  --timeline TRACE  draw a stage's --trace file as an SVG timeline instead (-o: where; by\n"
    "                    default TRACE with .svg for .json)\n"
    "  -h, --help        this text\n"
    "\n"
    "A program that needs more than one round of requests (stage 01 sends one at a time; a small\n"
    "--concurrency) is skipped where its rounds x delay come to over 20 s. Each run may take a\n"
    "minute plus three times its expected time plus 5 ms per request; then it is killed and shown\n"
    "as failed. Progress goes to stderr, only on a terminal. Ctrl-C stops the run in progress and\n"
    "the servers, and prints the table so far.\n";

class UsageError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct Options {
    std::vector<std::size_t> counts;
    Duration delay = std::chrono::milliseconds(100);
    std::size_t concurrency = 0;      // --concurrency C; 0: every request at once
    std::vector<std::string> stages;  // as given to --stages; empty: the default set
    std::string url;                  // empty: start a server
    std::vector<std::string> servers = {"lab"};  // which servers to start: "lab", "nginx"
    bool peers = false;
    std::size_t runs = 1;
    std::string out = ".";
    std::string timeline;             // --timeline TRACE
    std::string timeline_out;         // -o
    bool help = false;
};

std::size_t parse_positive(const std::string& text, const std::string& what) {
    std::size_t value = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || error != std::errc() || end != text.data() + text.size() || value == 0 ||
        value > 1'000'000) {
        throw UsageError(what + " must be a whole number from 1 to 1000000, not '" + text + "'");
    }
    return value;
}

std::vector<std::string> split(const std::string& text, char separator) {
    std::vector<std::string> parts;
    std::stringstream stream(text);
    std::string part;
    while (std::getline(stream, part, separator)) {
        if (!part.empty()) {
            parts.push_back(part);
        }
    }
    return parts;
}

Options parse_options(const std::vector<std::string>& args) {
    Options options;
    bool server_given = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
        std::string name = args[i];
        std::string value;
        bool has_value = false;
        if (name.rfind("--", 0) == 0 && name.find('=') != std::string::npos) {
            value = name.substr(name.find('=') + 1);
            name = name.substr(0, name.find('='));
            has_value = true;
        }
        auto take_value = [&] {
            if (!has_value) {
                if (i + 1 == args.size() || args[i + 1].rfind("--", 0) == 0) {
                    throw UsageError("option " + name + " needs a value");
                }
                value = args[++i];
            }
            return value;
        };
        if (name == "-h" || name == "--help") {
            options.help = true;
            return options;
        } else if (name == "--delay") {
            try {
                options.delay = sixways::parse_duration(take_value());
            } catch (const sixways::DurationError& error) {
                throw UsageError(std::string("--delay: ") + error.what());
            }
        } else if (name == "--concurrency") {
            options.concurrency = parse_positive(take_value(), "--concurrency");
        } else if (name == "--server") {
            options.servers = split(take_value(), ',');
            if (options.servers.empty()) {
                throw UsageError("--server needs lab, nginx or both");
            }
            for (std::size_t k = 0; k < options.servers.size(); ++k) {
                const std::string& server = options.servers[k];
                if (server != "lab" && server != "nginx") {
                    throw UsageError("--server: unknown server '" + server + "' (known: lab, nginx)");
                }
                if (std::find(options.servers.begin(), options.servers.begin() + k, server) !=
                    options.servers.begin() + k) {
                    throw UsageError("--server names " + server + " twice");
                }
            }
            server_given = true;
        } else if (name == "--stages") {
            options.stages = split(take_value(), ',');
            if (options.stages.empty()) {
                throw UsageError("--stages needs at least one name");
            }
        } else if (name == "--url") {
            options.url = take_value();
            try {
                sixways::parse_url(options.url);
            } catch (const sixways::UrlError& error) {
                throw UsageError(std::string("--url: ") + error.what());
            }
        } else if (name == "--peers") {
            options.peers = true;
        } else if (name == "--runs") {
            options.runs = parse_positive(take_value(), "--runs");
        } else if (name == "--out") {
            options.out = take_value();
        } else if (name == "--timeline") {
            options.timeline = take_value();
        } else if (name == "-o") {
            options.timeline_out = take_value();
        } else if (name.size() > 1 && name[0] == '-') {
            throw UsageError("unknown option '" + args[i] + "'");
        } else {
            options.counts.push_back(parse_positive(name, "N"));
        }
    }
    if (!options.timeline_out.empty() && options.timeline.empty()) {
        throw UsageError("-o goes with --timeline");
    }
    if (server_given && !options.url.empty()) {
        throw UsageError("--server starts a server and --url names one: give one of them");
    }
    if (!options.url.empty()) {
        options.servers.clear();  // none to start
    }
    if (options.counts.empty()) {
        options.counts = {10, 100, 1000, 10000};
    }
    return options;
}

// ---- Finding the programs ----

// The directory this program is in: the stages and the lab server are built next to it.
std::string own_directory() {
    std::error_code error;
    std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
    return error ? std::string(".") : self.parent_path().string();
}

// Debian's python3-aiohttp installs into the system Python, /usr/bin/python3, which is not always
// the first python3 on PATH (a virtualenv or pyenv may come first). The first interpreter that can
// import aiohttp wins; `tried` lists the ones that could not.
std::string python_with_aiohttp(std::vector<std::string>& tried) {
    std::vector<std::string> candidates = {"/usr/bin/python3", on_path("python3"),
                                           "/usr/local/bin/python3"};
    for (const std::string& python : candidates) {
        if (python.empty() || !executable(python) ||
            std::find(tried.begin(), tried.end(), python) != tried.end()) {
            continue;
        }
        ChildOutcome check = sixways::lab::run_to_end({python, "-c", "import aiohttp"},
                                                      std::chrono::seconds(30), -1);
        if (check.exit_code == 0) {
            return python;
        }
        tried.push_back(python);
    }
    return "";
}

const std::vector<std::string> stage_names = {"01_blocking",    "02_threads",
                                              "03_nonblocking", "04_callbacks",
                                              "05_generators",  "06_coroutines"};

// Each stage's tiny version (tiny.cpp in its folder): measured only when --stages names it in
// full, since "04" means 04_callbacks.
const std::vector<std::string> tiny_names = {"01_tiny", "02_tiny", "03_tiny",
                                             "04_tiny", "05_tiny", "06_tiny"};

// Whether the user's --stages token names this program: "01" or "01_blocking", "yardstick", ...
bool named(const std::string& token, const std::string& key) {
    return token == key || (key.size() > 2 && key[2] == '_' && token == key.substr(0, 2));
}

bool wanted(const Options& options, const std::string& key, bool by_default) {
    if (options.stages.empty()) {
        return by_default;
    }
    return std::any_of(options.stages.begin(), options.stages.end(),
                       [&](const std::string& token) { return named(token, key); });
}

// The programs to run, in table order; what could not be included goes into `missing` (one line
// each, for stderr and under the table).
std::vector<Program> find_programs(const Options& options, const std::string& bin,
                                   std::vector<std::string>& missing) {
    for (const std::string& token : options.stages) {
        bool known = std::any_of(stage_names.begin(), stage_names.end(),
                                 [&](const std::string& key) { return named(token, key); }) ||
                     std::find(tiny_names.begin(), tiny_names.end(), token) != tiny_names.end() ||
                     token == "yardstick" || token == "aiohttp" || token == "ab";
        if (!known) {
            throw UsageError("--stages: unknown name '" + token +
                             "' (known: 01 to 06, 01_tiny to 06_tiny, yardstick, aiohttp, ab)");
        }
    }
    std::vector<Program> programs;
    for (const std::string& name : stage_names) {
        if (!wanted(options, name, true)) {
            continue;
        }
        if (executable(bin + "/" + name)) {
            programs.push_back({Program::Kind::stage, name, bin + "/" + name, "",
                                name == "01_blocking"});
        } else {
            missing.push_back(name + ": not built (no " + bin + "/" + name + ")");
        }
    }
    // A tiny version only by its full name; none has --concurrency. 01_tiny sends one request at a
    // time, as 01_blocking does; the others send every request at once.
    for (const std::string& name : tiny_names) {
        if (std::find(options.stages.begin(), options.stages.end(), name) == options.stages.end()) {
            continue;
        }
        if (options.concurrency != 0) {
            missing.push_back(name + ": skipped, it has no --concurrency");
        } else if (executable(bin + "/" + name)) {
            programs.push_back({Program::Kind::stage, name, bin + "/" + name, "", name == "01_tiny"});
        } else {
            missing.push_back(name + ": not built (no " + bin + "/" + name + ")");
        }
    }
    if (wanted(options, "yardstick", true)) {
        if (executable(bin + "/yardstick")) {
            programs.push_back({Program::Kind::yardstick, "yardstick (C, no parser)",
                                bin + "/yardstick", "", false});
        } else if (!options.stages.empty()) {
            missing.push_back("yardstick: not built (no " + bin + "/yardstick)");
        }
    }
    // --peers adds the peers to whatever --stages picked: "--stages 06,yardstick --peers".
    if (options.peers || wanted(options, "aiohttp", false)) {
        std::string script = bin + "/peers/aiohttp_fetch.py";
        std::vector<std::string> tried;
        std::string python = python_with_aiohttp(tried);
        if (!std::filesystem::exists(script)) {
            missing.push_back("aiohttp: skipped, no " + script);
        } else if (python.empty()) {
            std::string list;
            for (const std::string& candidate : tried) {
                list += (list.empty() ? "" : ", ") + candidate;
            }
            missing.push_back("aiohttp: skipped, found no python3 that can import aiohttp (tried " +
                              (list.empty() ? std::string("none") : list) +
                              "); on Debian: apt-get install python3-aiohttp");
        } else {
            programs.push_back({Program::Kind::aiohttp, "aiohttp (Python asyncio)", python, script,
                                false});
        }
    }
    if (options.peers || wanted(options, "ab", false)) {
        std::string ab = on_path("ab");
        if (ab.empty()) {
            missing.push_back("ab: skipped, ApacheBench is not on PATH; on Debian: apt-get install "
                              "apache2-utils");
        } else {
            programs.push_back({Program::Kind::ab, "ab (ApacheBench)", ab, "", false});
        }
    }
    return programs;
}

// ---- Ctrl-C ----

// The handler only writes a byte to a pipe (async-signal-safe); the loop watches the pipe's read
// end, and run_to_end kills the run in progress when it becomes readable. A handler (not SIG_IGN)
// is reset to the default by exec, so the children still react to Ctrl-C normally.
int stop_pipe[2] = {-1, -1};

extern "C" void on_stop_signal(int) {
    const int saved_errno = errno;
    (void)!write(stop_pipe[1], "s", 1);
    errno = saved_errno;
}

void install_stop_handler() {
    if (pipe2(stop_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
        throw std::runtime_error("pipe2 failed");
    }
    struct sigaction action{};
    action.sa_handler = on_stop_signal;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, nullptr);
    sigaction(SIGTERM, &action, nullptr);
}

bool stop_requested() {
    pollfd fd{stop_pipe[0], POLLIN, 0};
    return poll(&fd, 1, 0) == 1;
}

// ---- Progress (stderr, only on a terminal) ----

// One line on stderr, rewritten in place: which run of how many, which program and N, run k of K,
// and how long this run and the whole comparison have taken so far. The clocks move on while a run
// goes (tick), so a long one (stage 01 at N = 100 takes 10 s) shows that it is still going. Only on
// a terminal: in a pipe or a file it would be noise.
class Progress {
public:
    explicit Progress(std::size_t total)
        : total_(total), shown_(isatty(STDERR_FILENO) == 1), started_(sixways::Clock::now()) {}

    bool shown() const { return shown_; }

    // A run begins: "04_callbacks, N = 1000, run 1 of 3".
    void start(const std::string& what) {
        ++done_;
        what_ = what;
        run_started_ = sixways::Clock::now();
        show();
    }

    // While the run goes: the same line, its clocks moved on.
    void tick() { show(); }

    void erase() {
        if (shown_ && width_ > 0) {
            std::cerr << "\r" << std::string(width_, ' ') << "\r" << std::flush;
            width_ = 0;
        }
    }

private:
    void show() {
        if (!shown_) {
            return;
        }
        const sixways::Clock::time_point now = sixways::Clock::now();
        char clocks[64];
        std::snprintf(clocks, sizeof clocks, ", %.1f s (%.0f s in all)",
                      std::chrono::duration<double>(now - run_started_).count(),
                      std::chrono::duration<double>(now - started_).count());
        std::string line = "[" + std::to_string(done_) + "/" + std::to_string(total_) + "] " + what_ +
                           clocks;
        std::size_t width = std::max(line.size(), width_);
        line.resize(width, ' ');
        width_ = width;
        std::cerr << "\r" << line << std::flush;
    }

    std::size_t total_;
    std::size_t done_ = 0;
    bool shown_;
    std::size_t width_ = 0;
    sixways::Clock::time_point started_;      // of the whole comparison
    sixways::Clock::time_point run_started_;  // of the run in progress
    std::string what_;
};

// ---- One run ----

// The last non-empty line a program wrote to stderr, for the note of a failed run.
std::string last_line(const std::string& text) {
    std::vector<std::string> lines = split(text, '\n');
    std::string line = lines.empty() ? "" : lines.back();
    return line.size() > 120 ? line.substr(0, 117) + "..." : line;
}

// Runs `program` once; adds its report to `row`, or a note about why there is none.
void run_once(const Program& program, std::size_t n, const std::string& url,
              const Options& options, Row& row, Progress& progress) {
    Duration limit = sixways::lab::time_limit(program, n, options.concurrency, options.delay);
    std::function<void()> tick;
    if (progress.shown()) {
        tick = [&progress] { progress.tick(); };
    }
    ChildOutcome outcome = sixways::lab::run_to_end(
        sixways::lab::command_line(program, n, options.concurrency, url), limit, stop_pipe[0], tick);
    ++row.attempts;
    if (outcome.stopped) {
        row.note = "stopped by Ctrl-C";
        return;
    }
    std::string problem;
    if (outcome.timed_out || !outcome.start_error.empty() || outcome.signal != 0) {
        problem = outcome.describe(limit);
    } else {
        // Exit 1 means some requests failed: the report says how many, so it still counts.
        try {
            RunReport report = program.kind == Program::Kind::ab
                                   ? sixways::lab::read_ab_report(outcome.out, n)
                                   : sixways::lab::read_json_report(outcome.out);
            // CPU time and memory from wait4, the same way for every program.
            report.cpu_s = outcome.cpu_s;
            report.max_rss_kb = static_cast<double>(outcome.max_rss_kb);
            row.runs.push_back(report);
            return;
        } catch (const std::exception& error) {
            problem = outcome.describe(limit) + ", no report (" + error.what() + ")";
        }
    }
    std::string said = last_line(outcome.err);
    row.note = "failed: " + problem + (said.empty() ? "" : ": " + said);
}

// The machine's load average over the last minute, "6.89" (or "unknown").
std::string load_average() {
    std::string load;
    std::ifstream loadavg("/proc/loadavg");
    loadavg >> load;
    return load.empty() ? "unknown" : load;
}

bool write_file(const std::filesystem::path& path, const std::string& text) {
    std::ofstream file(path, std::ios::binary);
    file << text;
    file.close();
    if (!file) {
        std::cerr << "compare: cannot write " << path.string() << "\n";
        return false;
    }
    return true;
}

int draw_timeline(const Options& options) {
    std::string out = options.timeline_out;
    if (out.empty()) {
        std::filesystem::path path(options.timeline);
        out = path.replace_extension(".svg").string();
    }
    std::ifstream file(options.timeline, std::ios::binary);
    if (!file) {
        std::cerr << "compare: cannot read " << options.timeline << "\n";
        return 1;
    }
    std::stringstream text;
    text << file.rdbuf();
    std::string svg;
    try {
        svg = sixways::lab::timeline_svg(text.str());
    } catch (const std::exception& error) {
        std::cerr << "compare: " << options.timeline << " is not a trace: " << error.what() << "\n";
        return 1;
    }
    if (!write_file(out, svg)) {
        return 1;
    }
    std::cerr << "compare: wrote " << out << "\n";
    return 0;
}

int compare(const Options& options) {
    const std::string bin = own_directory();
    std::vector<std::string> missing;
    std::vector<Program> programs = find_programs(options, bin, missing);
    for (const std::string& line : missing) {
        std::cerr << "compare: " << line << "\n";
    }
    if (programs.empty()) {
        std::cerr << "compare: nothing to run\n";
        return 1;
    }
    std::error_code error;
    std::filesystem::create_directories(options.out, error);
    if (error || access(options.out.c_str(), W_OK) != 0) {
        std::cerr << "compare: cannot write into --out " << options.out << "\n";
        return 1;
    }

    install_stop_handler();
    const std::string load_before = load_average();
    // The servers: the lab server, nginx in its place or beside it, or the one --url names.
    struct Target {
        std::string server;  // "lab", "nginx", or "" for --url
        std::string url;
    };
    std::vector<Target> targets;
    std::optional<sixways::lab::LabServerProcess> lab_server;
    std::optional<sixways::lab::NginxProcess> nginx;
    if (!options.url.empty()) {
        targets.push_back({"", options.url});
    }
    try {
        for (const std::string& server : options.servers) {
            if (server == "nginx") {
                sixways::lab::NginxInstall install = sixways::lab::find_nginx();
                if (!install.problem.empty()) {
                    std::cerr << "compare: " << install.problem << "\n";
                    return 1;
                }
                nginx.emplace(install, bin + "/peers/nginx.conf.in", options.delay);
                targets.push_back({server, nginx->url()});
            } else {
                lab_server.emplace(bin + "/labserver", options.delay);
                targets.push_back({server, lab_server->url()});
            }
        }
    } catch (const std::exception& failure) {
        std::cerr << "compare: " << failure.what() << "\n";
        return 1;
    }

    // One row per N, program and server (04_callbacks @ lab next to 04_callbacks @ nginx), made
    // before the runs so the table keeps this order; jobs[i] says what rows[i] runs, and where.
    struct Job {
        const Program* program;
        const Target* target;
    };
    std::vector<Row> rows;
    std::vector<Job> jobs;
    for (std::size_t n : options.counts) {
        for (const Program& program : programs) {
            for (const Target& target : targets) {
                Row row;
                row.program = program.label + (targets.size() > 1 ? " @ " + target.server : "");
                row.requests = n;
                row.concurrency = sixways::lab::in_flight(program, n, options.concurrency);
                row.server = target.server;
                row.yardstick = program.kind == Program::Kind::yardstick;
                if (auto skip =
                        sixways::lab::skip_note(program, n, options.concurrency, options.delay)) {
                    row.note = *skip;
                }
                rows.push_back(row);
                jobs.push_back({&program, &target});
            }
        }
    }

    // Interleaved: run 1 of everything, then run 2 of everything, ... so that a change in the
    // machine's load during the measurement touches every program alike.
    std::size_t total = 0;
    for (const Row& row : rows) {
        total += row.note.empty() ? options.runs : 0;
    }
    Progress progress(total);
    bool stopped = false;
    for (std::size_t run = 1; run <= options.runs && !stopped; ++run) {
        for (std::size_t i = 0; i < rows.size() && !stopped; ++i) {
            Row& row = rows[i];
            if (row.note.rfind("skipped", 0) == 0) {
                continue;
            }
            progress.start(row.program + ", N = " + std::to_string(row.requests) + ", run " +
                           std::to_string(run) + " of " + std::to_string(options.runs));
            run_once(*jobs[i].program, row.requests, jobs[i].target->url, options, row, progress);
            stopped = stop_requested();
        }
    }
    progress.erase();
    if (lab_server) {
        lab_server->stop();
    }
    if (nginx) {
        nginx->stop();
    }
    // A row with some good runs shows their medians; its note says how many others failed.
    for (Row& row : rows) {
        if (stopped && row.attempts == 0 && row.note.empty()) {
            row.note = "not run (interrupted)";
        }
        if (!row.runs.empty() && row.attempts > row.runs.size() && row.note.rfind("failed", 0) == 0) {
            row.note = std::to_string(row.attempts - row.runs.size()) + " of " +
                       std::to_string(row.attempts) + " runs " + row.note;
        }
    }

    // "http://127.0.0.1:41234/", or "http://127.0.0.1:41234/ (lab) and http://127.0.0.1:5678/ (nginx)"
    std::string where;
    std::string names;  // "the lab server and nginx (one worker process)"
    for (const Target& target : targets) {
        where += (where.empty() ? "" : " and ") + target.url +
                 (targets.size() > 1 ? " (" + target.server + ")" : "");
        names += (names.empty() ? "" : " and ") +
                 std::string(target.server == "nginx" ? "nginx (one worker process)"
                                                      : "the lab server");
    }
    const bool started = options.url.empty();  // servers we started, so their delay is known
    const std::string limit =
        options.concurrency == 0 ? "all requests at once"
                                 : "at most " + std::to_string(options.concurrency) +
                                       " requests in flight";
    std::string heading = "Each program fetched " + where + " N times, " + limit +
                          " (01_blocking: one at a time)";
    heading += started ? "; " + names + " answered each after " +
                             sixways::format_duration(options.delay)
                       : "";
    heading += options.runs > 1 ? ". Medians of " + std::to_string(options.runs) +
                                      " interleaved runs.\n\n"
                                : ". One run each.\n\n";
    std::string notes = "\nwall s: the fetching as the program timed it; CPU s and peak MB: the whole "
                        "process (start-up included), from wait4; failed: the most failed requests "
                        "in any one run. Machine: " +
                        std::to_string(std::thread::hardware_concurrency()) +
                        " cores; load average " + load_before + " before, " + load_average() +
                        " after.\n";
    for (const std::string& line : missing) {
        notes += "Not measured: " + line + "\n";
    }
    const std::string ratios = sixways::lab::format_ratios(rows);
    std::cout << heading << sixways::lab::format_table(rows) << (ratios.empty() ? "" : "\n" + ratios)
              << notes << std::flush;

    if (stopped) {
        std::cerr << "compare: interrupted; results.csv and results.svg not written\n";
        return 130;
    }
    sixways::lab::PlotOptions plot;
    std::string about;  // "lab server delay 100 ms, at most 100 in flight"
    if (started) {
        for (const std::string& server : options.servers) {
            about += (about.empty() ? "" : " and ") +
                     std::string(server == "nginx" ? "nginx" : "lab server");
        }
        about += (options.servers.size() > 1 ? ", delay " : " delay ") +
                 sixways::format_duration(options.delay);
    }
    if (options.concurrency > 0) {
        about += (about.empty() ? "" : ", ") + std::string("at most ") +
                 std::to_string(options.concurrency) + " in flight";
    }
    plot.about = about;
    plot.delay = options.delay;
    plot.reference_lines = started;
    std::filesystem::path out(options.out);
    bool written = write_file(out / "results.csv", sixways::lab::format_csv(rows)) &&
                   write_file(out / "results.svg", sixways::lab::plot_svg(rows, plot));
    if (!written) {
        return 1;
    }
    std::cerr << "compare: wrote " << (out / "results.csv").string() << " and "
              << (out / "results.svg").string() << "\n";
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    sixways::open_standard_streams();  // first: see common/standard_streams.hpp
    Options options;
    try {
        options = parse_options(std::vector<std::string>(argv + 1, argv + argc));
        if (options.help) {
            std::cout << usage;
            return 0;
        }
        if (!options.timeline.empty()) {
            return draw_timeline(options);
        }
        return compare(options);
    } catch (const UsageError& error) {
        std::cerr << "compare: " << error.what() << "\n(compare --help shows the options)\n";
        return 2;
    }
}
