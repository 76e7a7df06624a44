// The program around each stage's fetch_all: the command line, resolving once, progress, Ctrl-C and
// the report. Every stage's main.cpp is one call to run_stage, so the six binaries behave alike and
// differ only in the fetcher they run.
#include "common/cli.hpp"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <string_view>
#include <system_error>
#include <utility>

#include "common/address.hpp"
#include "common/explain.hpp"
#include "common/limits.hpp"
#include "common/report.hpp"
#include "common/standard_streams.hpp"
#include "common/trace.hpp"

namespace sixways {

namespace {

// Every request holds a Request and a Result (a few hundred bytes with its headers) until the
// report, so a million requests already need about a gigabyte. Larger counts are typing mistakes.
constexpr std::size_t max_count = 1'000'000;

constexpr const char* default_url = "http://127.0.0.1:8080/";  // the lab server's default

// A whole number from `minimum` to max_count, or a UsageError naming `what` and the text.
std::size_t parse_count(const std::string& text, const std::string& what, std::size_t minimum) {
    bool digits_only = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
        return c >= '0' && c <= '9';
    });
    if (!digits_only) {
        throw UsageError(what + " must be a whole number >= " + std::to_string(minimum) +
                         ", not '" + text + "'");
    }
    // Only digits, so from_chars either reads them all or reports that the value does not fit.
    unsigned long long value = 0;
    auto result = std::from_chars(text.data(), text.data() + text.size(), value);
    if (result.ec == std::errc::result_out_of_range || value > max_count) {
        throw UsageError(what + " must be at most " + std::to_string(max_count) + ", not '" + text +
                         "'");
    }
    if (value < minimum) {
        throw UsageError(what + " must be a whole number >= " + std::to_string(minimum) +
                         ", not '" + text + "'");
    }
    return static_cast<std::size_t>(value);
}

Url parse_url_option(const std::string& text) {
    try {
        return parse_url(text);
    } catch (const UrlError& error) {
        throw UsageError(std::string("--url: ") + error.what());
    }
}

Duration parse_timeout_option(const std::string& text) {
    Duration timeout;
    try {
        timeout = parse_duration(text);
    } catch (const DurationError& error) {
        throw UsageError(std::string("--timeout: ") + error.what());
    }
    if (timeout <= Duration::zero()) {
        throw UsageError("--timeout must be more than 0, not '" + text + "'");
    }
    return timeout;
}

bool starts_with(const std::string& text, std::string_view prefix) {
    return text.compare(0, prefix.size(), prefix) == 0;
}

bool is_refused(const StageInfo& stage, std::string_view option) {
    return std::find(stage.refused_options.begin(), stage.refused_options.end(), option) !=
           stage.refused_options.end();
}

}  // namespace

CliOptions parse_cli(const std::vector<std::string>& args, const StageInfo& stage) {
    CliOptions options;
    options.url = parse_url(default_url);
    std::string requests_text;                   // N as given, to name it if given twice

    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];

        if (arg == "-h" || arg == "--help") {
            options.help = true;  // the rest does not matter: help is printed and nothing sent
            return options;
        }

        // "--name=value" and "--name value" mean the same.
        std::string name = arg;
        std::string value;
        bool has_inline_value = false;
        if (starts_with(arg, "--")) {
            if (std::size_t equals = arg.find('='); equals != std::string::npos) {
                name = arg.substr(0, equals);
                value = arg.substr(equals + 1);
                has_inline_value = true;
            }
        }

        if (is_refused(stage, name)) {
            throw UsageError("option " + name + " is not offered by " + stage.name + ": " +
                             stage.refused_because);
        }

        if (name == "--url" || name == "--concurrency" || name == "--timeout" ||
            name == "--trace") {
            if (!has_inline_value) {
                // "--url --json" is a forgotten value, not a URL called "--json".
                if (i + 1 == args.size() || starts_with(args[i + 1], "--")) {
                    throw UsageError("option " + name + " needs a value");
                }
                value = args[++i];
            }
            if (name == "--url") {
                options.url = parse_url_option(value);
            } else if (name == "--concurrency") {
                options.concurrency = parse_count(value, "--concurrency", 1);
            } else if (name == "--trace") {
                if (value.empty()) {
                    throw UsageError("--trace needs a file name");
                }
                options.trace_path = value;
            } else {
                options.timeout = parse_timeout_option(value);
            }
            continue;
        }

        const StageFlag* flag = nullptr;
        for (const StageFlag& candidate : stage.flags) {
            if (candidate.name == name) {
                flag = &candidate;
            }
        }
        if (name == "--explain") {
            if (!stage.narrates) {
                throw UsageError("option --explain is not offered by " + stage.name +
                                 ": only 04_callbacks, 05_generators and 06_coroutines narrate "
                                 "their loop");
            }
            if (has_inline_value) {
                throw UsageError("option --explain takes no value");
            }
            options.explain = true;
            continue;
        }
        if (name == "--json" || flag != nullptr) {
            if (has_inline_value) {
                throw UsageError("option " + name + " takes no value");
            }
            if (flag != nullptr) {
                *flag->value = true;
            } else {
                options.json = true;
            }
            continue;
        }

        // Anything else that starts with '-' is an option we do not know, except "-3": that is
        // someone trying a negative N, and deserves the message about N.
        bool negative_number = arg.size() > 1 && arg[0] == '-' && arg[1] >= '0' && arg[1] <= '9';
        if (arg.size() > 1 && arg[0] == '-' && !negative_number) {
            throw UsageError("unknown option '" + arg + "'");
        }
        if (!requests_text.empty()) {
            throw UsageError("N given twice ('" + requests_text + "' and '" + arg + "')");
        }
        options.requests = parse_count(arg, "N", 0);
        requests_text = arg;
    }
    if (options.explain && options.json) {
        throw UsageError("--explain and --json cannot go together: --json prints one JSON object "
                         "on stdout and nothing else, and --explain narrates there");
    }
    return options;
}

std::string usage_text(const StageInfo& stage) {
    struct Line {
        std::string option;
        std::string help;
    };
    std::vector<Line> lines = {
        {"N", "how many requests to send (default 10; 0 sends none)"},
        {"--url URL", std::string("what to fetch, http://host[:port]/path (default ") + default_url +
                          ")"},
        {"--concurrency C", stage.one_at_a_time
                                ? "accepted, but this stage always sends one request at a time"
                                : "at most C requests in flight at once (default: all of them)"},
        {"--timeout DURATION",
         "deadline per request, connect to last byte: 2, 2.5s, 250ms (default 10 s)"},
        {"--json", "print one JSON object on stdout instead of the text report"},
        {"--trace FILE", "also write every request's phases to FILE as a timeline (Chrome trace JSON)"},
    };
    if (stage.narrates) {
        lines.push_back({"--explain", "narrate on stdout what the loop does, turn by turn (the first " +
                                          std::to_string(explain::full_turns) + " turns)"});
    }
    // "--timeout DURATION" is refused with "--timeout".
    std::erase_if(lines, [&stage](const Line& line) {
        return is_refused(stage, line.option.substr(0, line.option.find(' ')));
    });
    std::string synopsis = stage.name;
    for (const Line& line : lines) {
        synopsis += " [" + line.option + "]";
    }
    for (const StageFlag& flag : stage.flags) {
        lines.push_back({flag.name, flag.help});
        synopsis += " [" + flag.name + "]";
    }
    lines.push_back({"-h, --help", "print this help and exit"});
    synopsis += " [--help]";

    std::size_t width = 0;
    for (const Line& line : lines) {
        width = std::max(width, line.option.size());
    }
    std::string text = "usage: " + synopsis + "\n\n" + stage.summary + "\n\n";
    for (const Line& line : lines) {
        text += "  " + line.option + std::string(width - line.option.size() + 2, ' ') + line.help +
                "\n";
    }
    if (!stage.refused_options.empty()) {
        std::string names;
        for (const std::string& name : stage.refused_options) {
            names += (names.empty() ? "" : ", ") + name;
        }
        text += "\nNot offered here: " + names + ": " + stage.refused_because + ".\n";
    }
    text += "\nOptions that take a value also accept --name=value.\n"
            "A --trace file opens in ui.perfetto.dev or chrome://tracing.\n"
            "Exit status: 0 every request got a response, 1 some failed, 2 bad usage,\n"
            "130 interrupted by Ctrl-C (after printing the partial report).\n";
    return text;
}

namespace {

// The report on stdout (one line, or one JSON object), then the count of each error on stderr.
void print_report(const Report& report, bool json) {
    std::string out = (json ? format_json(report) : format_text(report)) + "\n";
    std::fputs(out.c_str(), stdout);
    std::fflush(stdout);
    std::fputs(format_error_counts(report).c_str(), stderr);
    std::fflush(stderr);
}

struct FileCloser {
    void operator()(std::FILE* file) const { std::fclose(file); }
};

// Writes the timeline for --trace and closes the file. Says so on stderr and returns false if the
// text did not all reach the file (a full disk shows up at fwrite or at fclose).
bool write_trace(std::FILE* file, const std::string& path, const std::string& text,
                 const StageInfo& stage) {
    bool written = std::fwrite(text.data(), 1, text.size(), file) == text.size();
    int error_number = errno;
    if (std::fclose(file) != 0 && written) {
        written = false;
        error_number = errno;
    }
    if (!written) {
        std::fprintf(stderr, "%s: --trace '%s': %s\n", stage.name.c_str(), path.c_str(),
                     errno_message("write", error_number).c_str());
    }
    return written;
}

// What the main thread, the stage's threads (through on_result) and the Ctrl-C watcher share.
// Every member below the mutex is guarded by it.
class RunState {
public:
    RunState(const StageInfo& stage, const CliOptions& cli)
        : stage_(stage), cli_(cli), reported_(cli.requests, false),
          show_progress_(isatty(STDERR_FILENO) == 1 && !cli.json && !cli.explain) {
        // Room for every result now: grown one push_back at a time, the records would be moved to
        // a buffer twice the size at every doubling, and the memory touched would be twice as much.
        // And record() then never needs memory for them, even when the fetchers have used it all.
        finished_.reserve(cli.requests);
        failure_messages_.reserve(cli.requests);
    }

    bool shows_progress() const { return show_progress_; }

    void fetch_started() {
        std::lock_guard lock(mutex_);
        fetch_started_ = Clock::now();
        fetching_ = true;
    }

    // options.on_result. Stage 02 calls it from many threads at once, and it must not throw. Out of
    // memory, it still records the request, with "out of memory" for a message it cannot copy.
    void record(std::size_t index, const Result& result) noexcept {
        std::string message;
        try {
            message = result.error_message;
        } catch (const std::bad_alloc&) {
            message = "out of memory";  // short enough to need no allocation
        }
        std::lock_guard lock(mutex_);
        if (index >= reported_.size() || reported_[index]) {
            misreported_ = true;
            misreported_index_ = index;
            return;
        }
        reported_[index] = true;
        // Both have room for every request (see the constructor): these never allocate.
        finished_.push_back(Finished{index, result.timing, result.response.body_bytes,
                                     result.response.status, result.error});
        if (!result.ok()) {
            failure_messages_.push_back(std::move(message));
        }
        failed_ += result.ok() ? 0 : 1;
        show_progress_line();
    }

    // The watcher calls this ten times a second while there is a progress line, so that its clock
    // moves on even while no request finishes (stage 01 finishes one every 100 ms; a stage waiting
    // for a slow server may finish none for seconds).
    void tick() {
        std::lock_guard lock(mutex_);
        if (!done_) {
            show_progress_line();
        }
    }

    // The main thread has the results and will print the report: the watcher must not print one.
    // If the watcher is printing the partial report right now, this waits for the mutex, and the
    // watcher ends the process before it is released.
    void mark_done() {
        std::lock_guard lock(mutex_);
        done_ = true;
    }

    // For --trace: the open file and the resolve, so that Ctrl-C can write the partial timeline.
    void set_trace(std::FILE* file, const TraceRun& trace_run) {
        std::lock_guard lock(mutex_);
        trace_file_ = file;
        trace_run_ = trace_run;
    }

    // on_result must have been called exactly once per request; returns what went wrong, if anything.
    std::string contract_error() {
        std::lock_guard lock(mutex_);
        if (misreported_) {
            return "on_result was called twice for request " + std::to_string(misreported_index_) +
                   " or for a request that does not exist";
        }
        if (finished_.size() != reported_.size()) {
            return "on_result was called for " + std::to_string(finished_.size()) + " of " +
                   std::to_string(reported_.size()) + " requests";
        }
        return "";
    }

    // fetch_all gave up because the run as a whole ran out of something: memory (std::bad_alloc,
    // `message` null), or what a system call needed for every request (epoll_create1 with no
    // descriptor left: `message` is its error). No stage handles these itself, so this is the one
    // place that does. The requests it did not finish fail with `limit`, and `results` is put
    // together from what was recorded, in the room it already has. Returns how many failed here.
    std::size_t fail_unfinished(std::vector<Result>& results, const char* message) {
        std::size_t failed = 0;
        for (std::size_t index = 0; index < cli_.requests; ++index) {
            bool reported = false;
            {
                std::lock_guard lock(mutex_);
                reported = reported_[index];
            }
            if (!reported) {
                Result result;
                if (message == nullptr) {
                    fail_out_of_memory(result);  // allocates nothing
                } else {
                    result.fail(ErrorKind::limit, message);
                }
                record(index, result);
                ++failed;
            }
        }
        std::lock_guard lock(mutex_);
        results.clear();
        results.resize(cli_.requests);
        std::size_t next_message = 0;
        for (const Finished& finished : finished_) {
            results[finished.index] = as_result(finished, next_message);
        }
        return failed;
    }

    void erase_progress_line() {
        std::lock_guard lock(mutex_);
        erase_progress_line_locked();
    }

    // Called by the watcher on Ctrl-C. Prints the partial report and ends the process, unless the
    // main thread has already taken over (then the signal was the main thread waking the watcher).
    void interrupted(int signal_number) {
        std::lock_guard lock(mutex_);  // held until _exit: no result or progress line gets in between
        if (done_) {
            return;
        }
        erase_progress_line_locked();
        // The finished requests as Results again, for the report and the timeline.
        std::vector<Result> finished(finished_.size());
        std::size_t next_message = 0;
        for (std::size_t i = 0; i < finished_.size(); ++i) {
            finished[i] = as_result(finished_[i], next_message);
        }
        Report report = summarise(stage_.name, cli_.url.to_string(), cli_.requests, finished);
        report.wall_s =
            fetching_ ? std::chrono::duration<double>(Clock::now() - fetch_started_).count() : 0.0;
        add_process_usage(report);
        // The timeline first: a stdout whose reader has gone ends the process by SIGPIPE at
        // print_report, and the file must be whole by then.
        if (trace_file_ != nullptr) {
            // The requests that finished, at their own index; the others never started, as far as
            // the timeline can tell.
            std::vector<Result> results(cli_.requests);
            for (std::size_t i = 0; i < finished_.size(); ++i) {
                results[finished_[i].index] = finished[i];
            }
            write_trace(trace_file_, cli_.trace_path, format_trace(trace_run_, results), stage_);
        }
        print_report(report, cli_.json);
        // _exit, not exit: the stage's threads are still running, and exit() would destroy the
        // objects they are using. 128 + signal number is the shell's convention (130 for SIGINT).
        _exit(128 + signal_number);
    }

private:
    // What a partial report and timeline need of a finished request, and no more: 64 bytes where a
    // copy of its Result would take 184 (a run of 50,000 requests would hold 9 MB of copies).
    struct Finished {
        std::size_t index;
        Timing timing;
        std::size_t body_bytes;
        int status;
        ErrorKind error;
    };

    // A finished request as a Result again. `next_message` walks failure_messages_ alongside
    // finished_: call this for the records in their order.
    Result as_result(const Finished& finished, std::size_t& next_message) const {
        Result result;
        result.timing = finished.timing;
        result.response.body_bytes = finished.body_bytes;
        result.response.status = finished.status;
        result.error = finished.error;
        if (!result.ok()) {
            result.error_message = failure_messages_[next_message++];
        }
        return result;
    }

    // One line on stderr, rewritten in place with '\r', at most ten times a second: requests done
    // of N, how many failed, and the time since the first request started. Only on a terminal (in
    // a pipe or a file it would be noise), and not with --json: whoever asks for JSON is a program,
    // or a person who will read the numbers at the end, and the terminal is theirs to keep clean.
    // Nor with --explain: the narration is on the same terminal, and the line would cut into it.
    void show_progress_line() {
        if (!show_progress_ || !fetching_) {
            return;
        }
        Clock::time_point now = Clock::now();
        if (now - last_progress_ < std::chrono::milliseconds(100)) {
            return;
        }
        last_progress_ = now;
        // In a buffer on the stack: record() must work when memory has run out.
        char line[160];
        const double elapsed = std::chrono::duration<double>(now - fetch_started_).count();
        const int length = std::snprintf(line, sizeof line, "%s: %zu/%zu done, %zu failed, %.1f s",
                                         stage_.name.c_str(), finished_.size(), cli_.requests,
                                         failed_, elapsed);
        if (length < 0) {
            return;
        }
        const std::size_t shown = std::min(static_cast<std::size_t>(length), sizeof line - 1);
        // Pad with spaces so a shorter line covers the previous one completely.
        const std::size_t width = std::max(shown, progress_width_);
        std::fprintf(stderr, "\r%s%*s", line, static_cast<int>(width - shown), "");
        progress_width_ = width;
        std::fflush(stderr);
    }

    void erase_progress_line_locked() {
        if (progress_width_ > 0) {
            std::fputs(("\r" + std::string(progress_width_, ' ') + "\r").c_str(), stderr);
            std::fflush(stderr);
            progress_width_ = 0;
        }
    }

    const StageInfo& stage_;
    const CliOptions& cli_;

    std::mutex mutex_;
    std::vector<bool> reported_;      // on_result has been called for request i
    std::vector<Finished> finished_;  // in the order they finished
    std::vector<std::string> failure_messages_;  // of the failed ones among them, in the same order
    std::size_t failed_ = 0;
    bool misreported_ = false;          // on_result broke its contract: called twice, or for
    std::size_t misreported_index_ = 0;  // a request that does not exist

    Clock::time_point fetch_started_;
    bool fetching_ = false;
    bool done_ = false;
    const bool show_progress_;
    Clock::time_point last_progress_;
    std::size_t progress_width_ = 0;
    std::FILE* trace_file_ = nullptr;
    TraceRun trace_run_;
};

// Ctrl-C without a signal handler.
//
// A signal handler may run in the middle of anything (inside malloc, or while a thread holds the
// results' mutex) and may only call async-signal-safe functions: it could not build a report. So
// instead SIGINT and SIGTERM are blocked, and one thread waits for them with sigtimedwait(), after
// which it is an ordinary thread that may lock the mutex and print. While there is a progress
// line, the same thread wakes ten times a second to move its clock on.
//
// A blocked signal stays blocked in every thread created afterwards (threads inherit the mask), so
// the constructor must run before the stage starts any thread: then the watcher is the only thread
// that ever receives SIGINT, and no stage needs to know about it.
//
// Stopping the watcher when fetch_all returns: stop() first sets done (under the mutex), then sends
// SIGINT to the watcher thread alone with pthread_kill. The signal stays pending for that thread
// until its sigtimedwait() takes it, so it cannot be lost even if the watcher has not reached it
// yet. The watcher sees done and returns quietly. A real Ctrl-C that lands after done was set is
// taken the same way: the run is complete anyway and the full report follows.
//
// A program started with SIGINT ignored (a background job of a script, nohup) never receives it:
// an ignored signal is discarded even while blocked, which is what whoever started us asked for.
//
// If the system refuses the thread (no memory for even its small stack, no thread left), the
// signals are unblocked again and the run goes on without it: Ctrl-C then ends the process at once,
// without a report, and a line on stderr says so before the run starts.
class InterruptWatcher {
public:
    InterruptWatcher(RunState& run, const StageInfo& stage) : run_(run) {
        sigemptyset(&signals_);
        sigaddset(&signals_, SIGINT);
        sigaddset(&signals_, SIGTERM);
        pthread_sigmask(SIG_BLOCK, &signals_, &previous_mask_);
        const int error = start_thread();
        if (error != 0) {
            pthread_sigmask(SIG_SETMASK, &previous_mask_, nullptr);
            std::fprintf(stderr, "%s: no thread to wait for Ctrl-C (%s): Ctrl-C will end the run "
                                 "without a report\n",
                         stage.name.c_str(), std::strerror(error));
        }
    }

    InterruptWatcher(const InterruptWatcher&) = delete;
    InterruptWatcher& operator=(const InterruptWatcher&) = delete;

    ~InterruptWatcher() {
        stop();
        // A Ctrl-C still pending now is delivered as usual and ends the process.
        pthread_sigmask(SIG_SETMASK, &previous_mask_, nullptr);
    }

    void stop() {
        if (!running_) {
            return;
        }
        running_ = false;
        run_.mark_done();
        pthread_kill(thread_, SIGINT);
        pthread_join(thread_, nullptr);
    }

private:
    // The thread's stack: it only builds and prints a report, which needs a few KiB. The default
    // would be 8 MiB (`ulimit -s`), which a process capped at a small address space (`ulimit -v`)
    // might not have to give, and which would leave that much less for the requests.
    static constexpr std::size_t stack_size = 256 * 1024;

    // Starts watch() on a thread of its own; returns 0, or pthread_create's error. std::thread
    // cannot be given a stack size (stage 02 meets the same limit, and says more).
    int start_thread() {
        pthread_attr_t attributes;
        pthread_attr_init(&attributes);
        pthread_attr_setstacksize(&attributes, stack_size);
        const auto run = [](void* watcher) -> void* {
            static_cast<InterruptWatcher*>(watcher)->watch();
            return nullptr;
        };
        const int error = pthread_create(&thread_, &attributes, run, this);
        pthread_attr_destroy(&attributes);
        running_ = error == 0;
        return error;
    }

    void watch() {
        const timespec tenth_of_a_second{0, 100'000'000};
        const timespec* wake_up = run_.shows_progress() ? &tenth_of_a_second : nullptr;
        for (;;) {
            const int signal_number = sigtimedwait(&signals_, nullptr, wake_up);
            if (signal_number > 0) {
                run_.interrupted(signal_number);  // returns only if the main thread is done
                return;
            }
            if (errno == EAGAIN) {
                run_.tick();  // a tenth of a second went by; EINTR: wait again
            }
        }
    }

    RunState& run_;
    sigset_t signals_;
    sigset_t previous_mask_;
    pthread_t thread_{};
    bool running_ = false;
};

void print_internal_error(const StageInfo& stage, const std::string& message) {
    std::fprintf(stderr, "%s: internal error: %s\n", stage.name.c_str(), message.c_str());
}

// How many requests to keep in flight: --concurrency, or fewer when the descriptor limit would not
// let that many sockets be open at once. Each request in flight holds a socket, and a request that
// finds no descriptor fails (`limit`): under `ulimit -n 64`, 1000 requests at once would fail 940
// of them. Kept below the limit, the rest wait for a slot and every one of them gets through. The
// room is the limit less what is open now (stdio, a --trace file) and a few spare: epoll's own
// descriptor, and stage 03 opens a socket to a request's next address before it closes the last.
// Says so once on stderr when it lowers the number.
//
// Stage 01 sends one request at a time and needs one socket. 06_tiny is left as it is: it has no
// limit on purpose (06_coroutines adds one, and that is part of the lesson), and refuses
// --concurrency; a request of it that finds no descriptor fails with `limit`, and the report's
// error lines say "socket: Too many open files".
std::size_t concurrency_for_descriptors(const StageInfo& stage, const CliOptions& cli,
                                        long descriptor_limit) {
    if (stage.one_at_a_time) {
        return 1;
    }
    if (is_refused(stage, "--concurrency")) {
        return cli.concurrency;
    }
    constexpr long spare = 8;
    const long in_use = open_descriptor_count();
    if (descriptor_limit < 0 || in_use < 0) {
        return cli.concurrency;  // nothing known to go by
    }
    const auto room = static_cast<std::size_t>(std::max(1L, descriptor_limit - in_use - spare));
    const std::size_t wanted = cli.concurrency == 0 ? cli.requests : cli.concurrency;
    if (wanted <= room) {
        return cli.concurrency;
    }
    std::fprintf(stderr, "%s: at most %zu requests in flight: the descriptor limit is %ld\n",
                 stage.name.c_str(), room, descriptor_limit);
    return room;
}

// Everything after parsing the command line and opening the --trace file: resolve, fetch, report.
// Returns the exit status.
int fetch_and_report(const StageInfo& stage, const CliOptions& cli,
                     std::unique_ptr<std::FILE, FileCloser> trace_file) {
    RunState run(stage, cli);
    InterruptWatcher watcher(run, stage);  // first: before anything can start a thread
    const long descriptor_limit = raise_open_file_limit();

    // Resolve once, before any fetching: getaddrinfo blocks (see common/address.cpp).
    std::vector<Address> addresses;
    std::string resolve_error;
    TraceRun trace_run{stage.name, cli.url.to_string(), cli.requests, Clock::now(), {}, {}, {}};
    try {
        addresses = resolve(cli.url);
    } catch (const ResolveError& error) {
        resolve_error = error.what();
    }
    trace_run.resolve_done = Clock::now();
    trace_run.resolve_error = resolve_error;
    if (trace_file != nullptr) {
        run.set_trace(trace_file.get(), trace_run);
    }

    std::vector<Result> results;
    double wall_s = 0;
    if (!resolve_error.empty()) {
        // Nothing to connect to: every request fails the same way, and none is sent.
        Result failed;
        failed.error = ErrorKind::resolve;
        failed.error_message = resolve_error;
        results.assign(cli.requests, failed);
    } else {
        Options options;
        options.concurrency = concurrency_for_descriptors(stage, cli, descriptor_limit);
        options.timeout = cli.timeout;
        // The report counts body bytes and reads no header: keeping them would only cost memory.
        options.body_cap = 0;
        options.keep_headers = false;
        options.on_result = [&run](std::size_t index, const Result& result) {
            run.record(index, result);
        };
        // Room for the results, taken now (address space only: nothing is written to it unless it
        // is used). If memory runs out while fetching, the report is still made, from what was
        // recorded, in this room. fetch_all's own vector takes its place otherwise.
        results.reserve(cli.requests);
        run.fetch_started();
        Clock::time_point started = Clock::now();
        try {
            const std::vector<Request> requests(cli.requests, Request{cli.url, addresses});
            // Only the stages that narrate record the loop: the others have none, and stage 02's
            // threads would all record at once into what one thread may use.
            explain::start(cli.explain, trace_file != nullptr && stage.narrates);
            results = stage.fetch_all(requests, options);
            explain::finish();
            trace_run.loop = explain::take_trace();
        } catch (const std::bad_alloc&) {
            const std::size_t failed = run.fail_unfinished(results, nullptr);
            watcher.stop();  // no progress line after this one
            run.erase_progress_line();
            std::fprintf(stderr, "%s: out of memory: the %zu requests without a result fail with limit\n",
                         stage.name.c_str(), failed);
        } catch (const std::system_error& error) {
            if (kind_for_errno(error.code().value(), ErrorKind::none) != ErrorKind::limit) {
                watcher.stop();  // not a limit (EBADF, EINVAL): a bug, as below
                run.erase_progress_line();
                print_internal_error(stage, std::string("fetch_all threw: ") + error.what());
                return 1;
            }
            const std::size_t failed = run.fail_unfinished(results, error.what());
            watcher.stop();
            run.erase_progress_line();
            std::fprintf(stderr, "%s: %s: the %zu requests without a result fail with limit\n",
                         stage.name.c_str(), error.what(), failed);
        } catch (const std::exception& error) {
            watcher.stop();
            run.erase_progress_line();
            print_internal_error(stage, std::string("fetch_all threw: ") + error.what());
            return 1;
        }
        wall_s = std::chrono::duration<double>(Clock::now() - started).count();
    }
    watcher.stop();
    run.erase_progress_line();

    if (results.size() != cli.requests) {
        print_internal_error(stage, "fetch_all returned " + std::to_string(results.size()) +
                                        " results for " + std::to_string(cli.requests) +
                                        " requests");
        return 1;
    }
    if (resolve_error.empty()) {
        if (std::string problem = run.contract_error(); !problem.empty()) {
            print_internal_error(stage, problem);
            return 1;
        }
    }

    Report report = summarise(stage.name, cli.url.to_string(), cli.requests, results);
    report.wall_s = wall_s;
    add_process_usage(report);
    // The timeline before the report, as on Ctrl-C: a broken stdout must not leave it empty.
    bool traced = trace_file == nullptr ||
                  write_trace(trace_file.release(), cli.trace_path, format_trace(trace_run, results),
                              stage);
    print_report(report, cli.json);
    return report.failed == 0 && traced ? 0 : 1;
}

}  // namespace

int run_stage(int argc, char** argv, const StageInfo& stage) {
    open_standard_streams();  // first: the trace file and the sockets must not become stdout
    CliOptions cli;
    try {
        cli = parse_cli(std::vector<std::string>(argv + std::min(argc, 1), argv + argc), stage);
    } catch (const UsageError& error) {
        std::fprintf(stderr, "%s: %s\ntry '%s --help'\n", stage.name.c_str(), error.what(),
                     stage.name.c_str());
        return 2;
    }
    if (cli.help) {
        std::fputs(usage_text(stage).c_str(), stdout);
        std::fflush(stdout);
        return 0;
    }

    // The trace file is created before anything is sent: a path that cannot be written is bad
    // usage, better found now than after a long run.
    // After an internal error it is closed empty: there are no results to draw.
    std::unique_ptr<std::FILE, FileCloser> trace_file;
    if (!cli.trace_path.empty()) {
        trace_file.reset(std::fopen(cli.trace_path.c_str(), "w"));
        if (trace_file == nullptr) {
            std::fprintf(stderr, "%s: --trace '%s': %s\n", stage.name.c_str(),
                         cli.trace_path.c_str(), errno_message("fopen", errno).c_str());
            return 2;
        }
    }

    try {
        return fetch_and_report(stage, cli, std::move(trace_file));
    } catch (const std::bad_alloc&) {
        // No room even for the record of each request, or for the report. (Memory that runs out
        // while fetching fails requests with `limit`, and the report says so.)
        std::fprintf(stderr, "%s: out of memory: no room for the report of %zu requests\n",
                     stage.name.c_str(), cli.requests);
        return 1;
    }
}

}  // namespace sixways
