#include "lab/compare_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "common/fetch.hpp"

namespace sixways::lab {

namespace {

double seconds(const timeval& tv) {
    return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6;
}

// fork + exec with the child's stdout and stderr on the given descriptors (they may be the same).
// Every descriptor we open is close-on-exec, so the child inherits nothing else of ours.
//
// How a failed exec is told apart from a program that ran and failed: a close-on-exec pipe. A
// successful exec closes it, so the parent reads end-of-file; a failed one writes its errno first.
pid_t spawn(const std::vector<std::string>& argv, int out_fd, int err_fd, std::string& start_error) {
    int exec_status[2];
    if (pipe2(exec_status, O_CLOEXEC) != 0) {
        start_error = errno_message("pipe2", errno);
        return -1;
    }
    std::vector<char*> args;
    for (const std::string& arg : argv) {
        args.push_back(const_cast<char*>(arg.c_str()));
    }
    args.push_back(nullptr);

    pid_t pid = fork();
    if (pid == 0) {
        // In the child: only async-signal-safe calls until exec (the parent may have threads).
        int null_fd = open("/dev/null", O_RDONLY);
        if (null_fd < 0 || dup2(null_fd, STDIN_FILENO) < 0 || dup2(out_fd, STDOUT_FILENO) < 0 ||
            dup2(err_fd, STDERR_FILENO) < 0) {
            int error = errno;
            (void)!write(exec_status[1], &error, sizeof error);
            _exit(127);
        }
        execv(args[0], args.data());
        int error = errno;
        (void)!write(exec_status[1], &error, sizeof error);
        _exit(127);
    }
    int fork_error = errno;
    close(exec_status[1]);
    if (pid < 0) {
        close(exec_status[0]);
        start_error = errno_message("fork", fork_error);
        return -1;
    }
    int error = 0;
    ssize_t n;
    while ((n = read(exec_status[0], &error, sizeof error)) < 0 && errno == EINTR) {
    }
    close(exec_status[0]);
    if (n == static_cast<ssize_t>(sizeof error)) {
        start_error = errno_message("execv", error);
        waitpid(pid, nullptr, 0);
        return -1;
    }
    return pid;
}

// Reads what is there into `into`; false at end of file (or an error).
bool drain(int fd, std::string& into) {
    char buffer[65536];
    ssize_t n = read(fd, buffer, sizeof buffer);
    if (n > 0) {
        into.append(buffer, static_cast<std::size_t>(n));
        return true;
    }
    return n < 0 && (errno == EINTR || errno == EAGAIN);
}

int milliseconds_until(Clock::time_point deadline) {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
    return static_cast<int>(std::clamp<long long>(left, 0, 1000));
}

}  // namespace

std::string ChildOutcome::describe(Duration limit) const {
    if (!start_error.empty()) {
        return "could not start: " + start_error;
    }
    if (timed_out) {
        return "killed after the time limit of " + format_duration(limit);
    }
    if (stopped) {
        return "stopped by Ctrl-C";
    }
    if (signal != 0) {
        return "killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
    }
    return "exit " + std::to_string(exit_code);
}

ChildOutcome run_to_end(const std::vector<std::string>& argv, Duration limit, int stop_fd) {
    ChildOutcome outcome;
    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) != 0) {
        outcome.start_error = errno_message("pipe2", errno);
        return outcome;
    }
    if (pipe2(err, O_CLOEXEC) != 0) {
        outcome.start_error = errno_message("pipe2", errno);
        close(out[0]);
        close(out[1]);
        return outcome;
    }
    pid_t pid = spawn(argv, out[1], err[1], outcome.start_error);
    close(out[1]);
    close(err[1]);
    if (pid < 0) {
        close(out[0]);
        close(err[0]);
        return outcome;
    }

    // Read both pipes until both are closed (the child exited, or was killed), or the time is up.
    const Clock::time_point deadline = Clock::now() + limit;
    bool out_open = true, err_open = true;
    while ((out_open || err_open) && !outcome.timed_out && !outcome.stopped) {
        pollfd fds[3] = {{out_open ? out[0] : -1, POLLIN, 0},
                         {err_open ? err[0] : -1, POLLIN, 0},
                         {stop_fd, POLLIN, 0}};
        int ready = poll(fds, 3, milliseconds_until(deadline));
        if (ready < 0 && errno != EINTR) {
            break;
        }
        if (fds[0].revents != 0) {
            out_open = drain(out[0], outcome.out);
        }
        if (fds[1].revents != 0) {
            err_open = drain(err[0], outcome.err);
        }
        if (stop_fd >= 0 && fds[2].revents != 0) {
            outcome.stopped = true;
        } else if (Clock::now() >= deadline) {
            outcome.timed_out = true;
        }
    }
    close(out[0]);
    close(err[0]);

    // Both pipes closed almost always means it has exited; wait for that within the time left (a
    // child that closed its output and went on is killed at the deadline like any other).
    int status = 0;
    rusage usage{};
    pid_t reaped = 0;
    while (!outcome.timed_out && !outcome.stopped &&
           (reaped = wait4(pid, &status, WNOHANG, &usage)) == 0) {
        if (Clock::now() >= deadline) {
            outcome.timed_out = true;
        } else {
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
    }
    if (reaped <= 0) {
        kill(pid, SIGKILL);  // our own child, not yet reaped: the id is still its
        while (wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {
        }
    }
    if (WIFEXITED(status)) {
        outcome.exit_code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        outcome.signal = WTERMSIG(status);
    }
    outcome.cpu_s = seconds(usage.ru_utime) + seconds(usage.ru_stime);
    outcome.max_rss_kb = usage.ru_maxrss;
    return outcome;
}

LabServerProcess::LabServerProcess(const std::string& path, Duration delay) {
    int output[2];
    if (pipe2(output, O_CLOEXEC) != 0) {
        throw std::runtime_error("labserver: " + errno_message("pipe2", errno));
    }
    long long delay_ms = std::chrono::duration_cast<std::chrono::milliseconds>(delay).count();
    std::string start_error;
    pid_ = spawn({path, "--port", "0", "--delay", std::to_string(delay_ms) + "ms"}, output[1],
                 output[1], start_error);
    close(output[1]);
    output_ = output[0];
    if (pid_ < 0) {
        close(output_);
        throw std::runtime_error("labserver: " + start_error);
    }

    // Its first stdout line: "listening on http://127.0.0.1:PORT/ (delay 100 ms)".
    std::string said;
    const Clock::time_point deadline = Clock::now() + std::chrono::seconds(10);
    const std::string marker = "listening on ";
    while (Clock::now() < deadline) {
        std::size_t at = said.find(marker);
        std::size_t end = at == std::string::npos ? at : said.find(' ', at + marker.size());
        if (end != std::string::npos) {
            url_ = said.substr(at + marker.size(), end - at - marker.size());
            return;
        }
        pollfd fd{output_, POLLIN, 0};
        if (poll(&fd, 1, milliseconds_until(deadline)) > 0 && !drain(output_, said)) {
            break;  // it closed its output: it has exited
        }
    }
    stop();
    throw std::runtime_error("labserver did not start" + (said.empty() ? "" : ": " + said));
}

LabServerProcess::~LabServerProcess() { stop(); }

void LabServerProcess::stop() {
    if (pid_ < 0) {
        return;
    }
    kill(pid_, SIGTERM);
    const Clock::time_point deadline = Clock::now() + std::chrono::seconds(5);
    int status = 0;
    pid_t reaped = 0;
    while ((reaped = waitpid(pid_, &status, WNOHANG)) == 0 && Clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (reaped == 0) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
    }
    close(output_);
    pid_ = -1;
}

}  // namespace sixways::lab
