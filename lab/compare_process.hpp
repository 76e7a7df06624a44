// Child processes for the compare tool: run a program to its end with a time limit (its output, its
// exit, its CPU time and peak memory), and keep a server (the lab server, or nginx in its place)
// running in the background. Every child is ended by its own process id and reaped by us, so an id
// we signal can never belong to another program.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "common/duration.hpp"

namespace sixways::lab {

// Whether `path` is a regular file we may execute.
bool executable(const std::string& path);

// `name` in the directories of $PATH, or "" when it is in none.
std::string on_path(const std::string& name);

struct ChildOutcome {
    std::string out;            // everything it wrote to stdout
    std::string err;            // and to stderr
    std::string start_error;    // it could not be started: "execv: No such file or directory"
    bool timed_out = false;     // killed at the time limit
    bool stopped = false;       // killed because stop_fd became readable (Ctrl-C)
    int exit_code = -1;         // its exit status, when it exited
    int signal = 0;             // the signal that ended it, when one did
    double cpu_s = 0;           // user + system time (wait4)
    long max_rss_kb = 0;        // peak resident memory (wait4)

    // "exit 1", "killed by signal 9", "killed after the time limit of 60 s", ...
    std::string describe(Duration limit) const;
};

// Runs argv (argv[0] is a path) with stdin from /dev/null, collects its output and waits for it to
// end, at most `limit`: then it is killed (SIGKILL). When `stop_fd` (if >= 0) becomes readable, the
// child is killed at once and `stopped` is set: that is how Ctrl-C reaches a run in progress.
// `while_waiting`, if given, is called about ten times a second until then (a progress line).
ChildOutcome run_to_end(const std::vector<std::string>& argv, Duration limit, int stop_fd,
                        const std::function<void()>& while_waiting = {});

// `build/bin/labserver --port 0 --delay D` in the background, for as long as this object lives.
class LabServerProcess {
public:
    // Starts it and waits (up to 10 s) for its "listening on URL" line. Throws std::runtime_error
    // with what it said if it does not get there.
    LabServerProcess(const std::string& path, Duration delay);
    ~LabServerProcess();  // stop()

    LabServerProcess(const LabServerProcess&) = delete;
    LabServerProcess& operator=(const LabServerProcess&) = delete;

    const std::string& url() const { return url_; }

    // SIGTERM, then SIGKILL if it has not exited within 5 s; reaps it. Safe to call twice.
    void stop();

private:
    pid_t pid_ = -1;
    // The read end of its stdout and stderr. Only the first line is read; the server writes a line
    // or two more at most (its descriptor limit, running out of descriptors), which the pipe's
    // 64 KiB hold without ever blocking it.
    int output_ = -1;
    std::string url_;
};

// Where nginx and its echo module are, or why they cannot be used.
struct NginxInstall {
    std::string nginx;        // the program: on PATH, or /usr/sbin/nginx (not on every user's PATH)
    std::string echo_module;  // ngx_http_echo_module.so, in the modules directory `nginx -V` names
    std::string problem;      // empty when both were found, else what to install
};
NginxInstall find_nginx();

// nginx in place of the lab server, in the background, for as long as this object lives: one
// worker process on 127.0.0.1 and a free port, configured from lab/peers/nginx.conf.in (see there)
// in a new directory under $TMPDIR (or /tmp), which stop() removes.
class NginxProcess {
public:
    // Starts it and waits (up to 10 s) until it answers /status/204. Throws std::runtime_error with
    // what it said (the last line of its error log) if it does not get there.
    NginxProcess(const NginxInstall& install, const std::string& config_template, Duration delay);
    ~NginxProcess();  // stop()

    NginxProcess(const NginxProcess&) = delete;
    NginxProcess& operator=(const NginxProcess&) = delete;

    const std::string& url() const { return url_; }

    // SIGTERM (nginx's fast shutdown: the master ends its worker, then itself), then SIGKILL if it
    // has not exited within 5 s; reaps it and removes its directory. Safe to call twice.
    void stop();

private:
    pid_t pid_ = -1;
    std::string prefix_;  // its directory, with a trailing slash, as nginx -p wants it
    std::string url_;
};

}  // namespace sixways::lab
