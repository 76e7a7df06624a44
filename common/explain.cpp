// The narration of --explain (see explain.hpp): the hooks' words, and the little they remember
// between two hooks to say who woke whom; and, for --trace, the records of the loop's turns and
// stage 06's task steps.
//
// The shape of a narration:
//
//   start (before the first epoll_wait):
//       connect(fd 5) -> EINPROGRESS: the handshake goes on in the kernel
//   turn 1: epoll_wait -> 1 event after 0.2 ms: fd 5 writable
//     runs on_connected (fd 5)                     stage 04: a step of the request
//       getsockopt(fd 5, SO_ERROR) -> 0: connected
//
// Two spaces: what the loop does or runs; four: what happens inside it (system calls, frames).
// "after 0.2 ms" is the time since the previous hook, so it is how long epoll_wait slept, plus
// the few microseconds of bookkeeping between the last step of the turn before and the call.
#include "common/explain.hpp"

#include <sys/epoll.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace sixways::explain {

namespace {

// What the narration remembers. One thread runs a stage's loop, so nothing here needs a lock.
struct Narration {
    bool printing = false;          // --explain
    bool tracing = false;           // --trace
    LoopTrace trace;
    std::unordered_map<std::uint64_t, std::string> woken_by;  // stage 06, by task number
    std::size_t turn = 0;           // 0: before the first epoll_wait
    std::string turn_line;          // the turn's line, printed once its events are all in
    std::vector<std::string> held;  // stage 06: what its events did, printed after the turn's line
    Clock::time_point last_hook = Clock::now();
    bool started = false;           // "start:" printed
    bool after_event = false;       // the hook before this one was event(): this one is its doing
    bool in_step = false;           // stage 06: between a step's start and its end
    int events_listed = 0;          // on the turn's line so far
    std::string last_event;         // "fd 5 writable", the event a socket wait's reader handles
    const char* frame = nullptr;    // stage 06: the frame the step runs now
    bool threw = false;             // stage 06: the frame that just finished ended by an exception
    int wait_fd = -1;               // stage 06: the socket wait the running frame made, if any
    bool wait_writable = false;
    std::vector<std::pair<int, bool>> waits;  // stage 05: each request's last Wait (fd, writable)
};

Narration& narration() {
    static Narration state;
    return state;
}

bool in_full() { return narration().printing && narration().turn <= full_turns; }

// The turn being recorded, if any.
TurnRecord* current_turn() {
    Narration& n = narration();
    return n.tracing && !n.trace.turns.empty() && n.trace.turns_dropped == 0 ? &n.trace.turns.back()
                                                                             : nullptr;
}

void flush_turn_line() {
    Narration& n = narration();
    if (!n.turn_line.empty()) std::fputs((std::exchange(n.turn_line, {}) + "\n").c_str(), stdout);
    for (const std::string& line : std::exchange(n.held, {})) std::fputs((line + "\n").c_str(), stdout);
}

// The turn's line goes out first, once no more events are coming.
void print(const std::string& line) {
    Narration& n = narration();
    if (!in_full()) return;
    flush_turn_line();
    if (n.turn == 0 && !n.started) {
        n.started = true;
        std::fputs("start (before the first epoll_wait):\n", stdout);
    }
    std::fputs((line + "\n").c_str(), stdout);
}

// Every hook starts here: it notes the time, and it keeps errno for the stage's code (which reads
// it after the hook) from whatever the formatting does.
class Hook {
public:
    Hook() : errno_(errno) {
        Narration& n = narration();
        after_event_ = std::exchange(n.after_event, false);
        since_last_ = Clock::now() - n.last_hook;
        n.last_hook += since_last_;
        if (TurnRecord* turn = current_turn()) turn->ran_until = n.last_hook;
    }
    ~Hook() { errno = errno_; }
    Hook(const Hook&) = delete;
    Hook& operator=(const Hook&) = delete;
    Duration since_last() const { return since_last_; }
    bool after_event() const { return after_event_; }

private:
    int errno_;
    bool after_event_;
    Duration since_last_;
};

std::string fd_text(int fd) { return "fd " + std::to_string(fd); }

// "EAGAIN", or the message when the C library has no name for the number.
std::string errno_name(int error) {
    const char* name = strerrorname_np(error);
    return name != nullptr ? name : std::strerror(error);
}

std::string readiness(std::uint32_t events) {
    std::string words;
    const std::pair<std::uint32_t, const char*> flags[] = {
        {EPOLLIN, "readable"}, {EPOLLOUT, "writable"}, {EPOLLERR, "error"}, {EPOLLHUP, "hung up"}};
    for (const auto& [flag, word] : flags) {
        if (events & flag) words += (words.empty() ? "" : " and ") + std::string(word);
    }
    return words;
}

std::string task_name(const std::string& task, std::uint64_t number) {
    return "task \"" + (task.empty() ? "Task-" + std::to_string(number) : task) + "\"";
}

// A frame's name is its coroutine function's as the compiler gives it: "gather<sixways::Result>"
// for a template. The name alone is what the source calls it.
std::string function(const char* name) {
    const std::string text = name;
    return text.substr(0, text.find('<'));
}

std::string milliseconds(Duration d) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f ms", std::chrono::duration<double, std::milli>(d).count());
    return text;
}

// The step being recorded ends now, suspended on `what`.
void end_step(const std::string& what) {
    Narration& n = narration();
    if (!n.tracing || n.trace.steps.empty() || n.trace.steps_dropped > 0) return;
    n.trace.steps.back().ended = n.last_hook;
    n.trace.steps.back().suspends_on = what;
}

}  // namespace

namespace detail {

void woke(int events) {
    Hook hook;
    Narration& n = narration();
    flush_turn_line();
    ++n.turn;
    n.events_listed = 0;
    if (n.tracing) {
        const Clock::time_point waited = n.last_hook - hook.since_last();
        if (TurnRecord* last = current_turn()) last->ran_until = waited;
        if (n.trace.turns.size() < max_records) {
            n.trace.turns.push_back({waited, n.last_hook, waited, events < 0 ? 0 : events, 0});
        } else {
            ++n.trace.turns_dropped;
        }
    }
    if (!in_full()) return;
    n.turn_line = "turn " + std::to_string(n.turn) + ": epoll_wait -> " +
                  (events < 0 ? std::string("interrupted by a signal")
                              : std::to_string(events) + (events == 1 ? " event" : " events")) +
                  " after " + milliseconds(hook.since_last());
}

void event(int fd, std::uint32_t epoll_events) {
    Hook hook;
    Narration& n = narration();
    n.last_event = fd_text(fd) + " " + readiness(epoll_events);
    n.after_event = true;
    if (!in_full()) return;
    n.turn_line += (n.events_listed++ == 0 ? ": " : ", ") + n.last_event;
}

void call(const char* name, int fd, long result) {
    Hook hook;
    const int error = errno;
    const std::string call = std::string(name) + "(" + fd_text(fd);
    const std::string_view what = name;
    std::string line;
    if (what == "getsockopt") {  // `result` is the SO_ERROR it read: how the connect ended
        line = call + ", SO_ERROR) -> " + (result == 0 ? "0: connected" : errno_name(static_cast<int>(result)));
    } else if (what == "close") {
        line = call + ")";
    } else if (result < 0) {
        line = call + ") -> " + errno_name(error);
        if (error == EINPROGRESS) line += ": the handshake goes on in the kernel";
        if (error == EAGAIN) line += ": nothing there now";
    } else if (what == "connect") {
        line = call + ") -> 0: connected at once";
    } else if (what == "recv" && result == 0) {
        line = call + ") -> 0: the server closed the connection";
    } else {
        line = call + ") -> " + std::to_string(result) + (result == 1 ? " byte" : " bytes");
    }
    print("    " + line);
}

void runs(const char* callback, int fd) {
    Hook hook;
    if (TurnRecord* turn = current_turn()) ++turn->ran;
    print("  runs " + std::string(callback) + (fd < 0 ? "" : " (" + fd_text(fd) + ")"));
}

void resumes(std::size_t request, bool timed_out) {
    Hook hook;
    Narration& n = narration();
    if (TurnRecord* turn = current_turn()) ++turn->ran;
    std::string why = "its deadline has passed (Event::timed_out)";
    if (!timed_out && request < n.waits.size()) {
        const auto [fd, writable] = n.waits[request];
        why = fd_text(fd) + (writable ? " writable" : " readable") + " (Event::ready)";
    }
    print("  resume the generator of request " + std::to_string(request) + ": " + why);
}

void yields(std::size_t request, int fd, bool writable) {
    Hook hook;
    Narration& n = narration();
    if (request >= n.waits.size()) n.waits.resize(request + 1, {-1, false});
    n.waits[request] = {fd, writable};
    print("    the generator of request " + std::to_string(request) + " yields Wait{" + fd_text(fd) + (writable ? ", writable}" : ", readable}") +
          ": the loop arms it in epoll");
}

void generator_done(std::size_t request) {
    Hook hook;
    print("    the generator of request " + std::to_string(request) + " is done: its result is final");
}

void wakes(const std::string& task, std::uint64_t number, const char* frame, bool cancelled) {
    Hook hook;
    Narration& n = narration();
    const std::string who = task_name(task, number);
    if (frame == nullptr) {
        if (n.tracing) n.woken_by[number] = "its creation";
        print((n.in_step ? "    " : "  ") + who + " is created: its first step is queued");
        return;
    }
    const std::string by = hook.after_event() ? n.last_event : n.in_step ? "this" : "a callback";
    if (n.tracing) {
        n.woken_by[number] = (by == "this" ? "a step" : by) +
                             (cancelled ? " cancelled it" : " completed the future it awaited") +
                             " in " + function(frame);
    }
    if (cancelled) {
        print((n.in_step ? "    this cancels " : "  a callback cancels ") + who + ", which awaits in " +
              function(frame) + ": its step is queued, and that co_await will throw CancelledError");
        return;
    }
    // A socket wait's reader completes its future while the loop collects, right after its event
    // (06_coroutines/event_loop.cpp, run_once); any other future is completed by running code.
    const std::string line = (hook.after_event() || !n.in_step ? "  " : "    ") + by +
                             " completes the future that " + who + " awaits in " + function(frame) +
                             ": its step is queued";
    // While the loop collects, the turn's line (with every event on it) goes out first.
    if (hook.after_event() && !n.turn_line.empty()) {
        n.held.push_back(line);
    } else {
        print(line);
    }
}

void step(const std::string& task, std::uint64_t number, const char* frame) {
    Hook hook;
    Narration& n = narration();
    n.in_step = true;
    n.frame = frame;
    n.wait_fd = -1;
    if (TurnRecord* turn = current_turn()) ++turn->ran;
    if (n.tracing) {
        if (n.trace.steps.size() < max_records) {
            const auto cause = n.woken_by.find(number);
            n.trace.steps.push_back({n.last_hook, n.last_hook, task_name(task, number), function(frame),
                                     cause == n.woken_by.end() ? "" : std::move(cause->second), ""});
        } else {
            ++n.trace.steps_dropped;
        }
        n.woken_by.erase(number);
    }
    print("  step " + task_name(task, number) + ": resumes " + function(frame));
}

void awaits(const char* parent, const char* child) {
    Hook hook;
    narration().frame = child;
    print("    " + function(parent) + " awaits " + function(child) + ", which the step resumes next");
}

void finishes(bool threw) { narration().threw = threw; }

void returns(const char* parent) {
    Hook hook;
    Narration& n = narration();
    const std::string ended = function(n.frame) + (n.threw ? " throws" : " returns");
    if (parent == nullptr) {
        end_step("done: " + function(n.frame) + " finished");
        print("    " + ended + ": the task is done, and its future with it");
        n.in_step = false;
        return;
    }
    print("    " + ended + ": the step resumes " + function(parent) + ", where co_await " + function(n.frame) +
          (n.threw ? "(...) rethrows the exception" : "(...) gives the result"));
    n.frame = parent;
}

void suspends(const char* frame) {
    Hook hook;
    Narration& n = narration();
    const std::string awaited =
        n.wait_fd < 0 ? "a future that is not done"
                      : "the future of " + fd_text(n.wait_fd) + (n.wait_writable ? " writable" : " readable");
    end_step(function(frame) + " awaits " + awaited);
    print("    " + function(frame) + " awaits " + awaited + ": the step ends");
    n.in_step = false;
}

void waits_for(int fd, bool writable) {
    Hook hook;
    Narration& n = narration();
    n.wait_fd = fd;
    n.wait_writable = writable;
}

}  // namespace detail

void start(bool narrate, bool trace) {
    Narration& n = narration();
    n.printing = narrate;
    n.tracing = trace;
    n.last_hook = Clock::now();
    recording = narrate || trace;
}

LoopTrace take_trace() { return std::move(narration().trace); }

void finish() {
    Narration& n = narration();
    if (!n.printing) return;
    flush_turn_line();
    if (n.turn > full_turns) {
        std::printf("\u2026 %zu more turns\n", n.turn - full_turns);
    }
    std::fflush(stdout);
}

}  // namespace sixways::explain
