#include "lab/compare_process.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "common/fetch.hpp"
#include "common/http.hpp"
#include "common/url.hpp"
#include "lab/compare.hpp"

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

// Ends a server we started: SIGTERM, then SIGKILL if it has not exited within 5 s; reaps it. Until
// it is reaped the id stays ours, so neither signal can reach another program.
void terminate_child(pid_t pid) {
    kill(pid, SIGTERM);
    const Clock::time_point deadline = Clock::now() + std::chrono::seconds(5);
    int status = 0;
    pid_t reaped = 0;
    while ((reaped = waitpid(pid, &status, WNOHANG)) == 0 && Clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (reaped == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
}

}  // namespace

bool executable(const std::string& path) {
    struct stat info{};
    return stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) && access(path.c_str(), X_OK) == 0;
}

std::string on_path(const std::string& name) {
    const char* path = std::getenv("PATH");
    std::stringstream directories(path == nullptr ? "" : path);
    std::string directory;
    while (std::getline(directories, directory, ':')) {
        if (!directory.empty() && executable(directory + "/" + name)) {
            return directory + "/" + name;
        }
    }
    return "";
}

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

ChildOutcome run_to_end(const std::vector<std::string>& argv, Duration limit, int stop_fd,
                        const std::function<void()>& while_waiting) {
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
        // Woken a tenth of a second at the latest when someone is waiting to be called.
        const int wait_ms = milliseconds_until(deadline);
        int ready = poll(fds, 3, while_waiting ? std::min(wait_ms, 100) : wait_ms);
        if (ready < 0 && errno != EINTR) {
            break;
        }
        if (while_waiting) {
            while_waiting();
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
    terminate_child(pid_);
    close(output_);
    pid_ = -1;
}

// ---- nginx ----

namespace {

// A port no one listens on now: bind port 0, read what the kernel gave, let it go. Another program
// could take it before nginx does; then nginx says "Address already in use" and compare stops.
std::uint16_t free_loopback_port() {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        throw std::runtime_error("nginx: " + errno_message("socket", errno));
    }
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
        int error = errno;
        close(fd);
        throw std::runtime_error("nginx: " + errno_message("bind", error));
    }
    close(fd);
    return ntohs(address.sin_port);
}

// The longest accept queue the system allows, as the lab server asks for (lab/labserver.cpp).
int listen_backlog() {
    std::ifstream file("/proc/sys/net/core/somaxconn");
    int value = 0;
    return file >> value && value > 0 ? value : SOMAXCONN;
}

// As many descriptors as nginx's worker may have: our hard limit, which it inherits (a root master
// could raise it further; the clients are held to it anyway).
long open_file_limit() {
    rlimit limit{};
    getrlimit(RLIMIT_NOFILE, &limit);
    const rlim_t most = 1 << 20;  // the kernel's usual nr_open, should the limit be "unlimited"
    return static_cast<long>(std::min(limit.rlim_max, most));
}

// Whether something on 127.0.0.1:port answers GET `target` with `status` (one try, 1 s at most).
bool answers(std::uint16_t port, const char* target, int status) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return false;
    }
    timeval second{1, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &second, sizeof second);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &second, sizeof second);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(port);
    std::string reply;
    if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0) {
        const std::string request =
            build_get_request(parse_url("http://127.0.0.1:" + std::to_string(port) + target));
        if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
            static_cast<ssize_t>(request.size())) {
            char buffer[512];
            ssize_t n;
            while ((n = recv(fd, buffer, sizeof buffer, 0)) > 0 && reply.size() < 4096) {
                reply.append(buffer, static_cast<std::size_t>(n));
            }
        }
    }
    close(fd);
    return reply.rfind("HTTP/1.1 " + std::to_string(status) + " ", 0) == 0;
}

// The last non-empty line of a file, for an error message ("" when there is none).
std::string last_line_of(const std::string& path) {
    std::ifstream file(path);
    std::string line, last;
    while (std::getline(file, line)) {
        if (!line.empty()) {
            last = line;
        }
    }
    return last;
}

}  // namespace

NginxInstall find_nginx() {
    NginxInstall install;
    install.nginx = on_path("nginx");
    if (install.nginx.empty() && executable("/usr/sbin/nginx")) {
        install.nginx = "/usr/sbin/nginx";
    }
    if (install.nginx.empty()) {
        install.problem = "nginx: not installed; on Debian: apt-get install nginx "
                          "libnginx-mod-http-echo";
        return install;
    }
    // `nginx -V` lists how it was built, "--modules-path=/usr/lib/nginx/modules" among the rest.
    ChildOutcome version = run_to_end({install.nginx, "-V"}, std::chrono::seconds(10), -1);
    const std::string said = version.err + version.out;
    const std::string option = "--modules-path=";
    std::string modules = "/usr/lib/nginx/modules";
    if (std::size_t at = said.find(option); at != std::string::npos) {
        at += option.size();
        modules = said.substr(at, said.find_first_of(" \n", at) - at);
    }
    install.echo_module = modules + "/ngx_http_echo_module.so";
    if (!std::filesystem::exists(install.echo_module)) {
        install.problem = "nginx: its echo module is not installed (no " + install.echo_module +
                          "); on Debian: apt-get install libnginx-mod-http-echo";
    }
    return install;
}

NginxProcess::NginxProcess(const NginxInstall& install, const std::string& config_template,
                           Duration delay) {
    std::ifstream file(config_template, std::ios::binary);
    if (!file.is_open()) {
        throw std::runtime_error("nginx: cannot read " + config_template);
    }
    std::stringstream text;
    text << file.rdbuf();
    const char* tmpdir = std::getenv("TMPDIR");
    std::string directory = std::string(tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp") +
                            "/sixways-nginx-XXXXXX";
    if (mkdtemp(directory.data()) == nullptr) {
        throw std::runtime_error("nginx: " + errno_message("mkdtemp", errno));
    }
    prefix_ = directory + "/";

    NginxSettings settings;
    settings.prefix = prefix_;
    settings.echo_module = install.echo_module;
    settings.delay = delay;
    settings.open_files = open_file_limit();
    settings.backlog = listen_backlog();
    std::string start_error;
    try {
        settings.port = free_loopback_port();
        std::ofstream config(prefix_ + "nginx.conf", std::ios::binary);
        config << nginx_config(text.str(), settings);
        config.close();
        if (!config) {
            throw std::runtime_error("nginx: cannot write " + prefix_ + "nginx.conf");
        }
    } catch (...) {
        stop();
        throw;
    }

    // What it prints before its error log is open goes to a file beside that log. -e: that log
    // from the start (otherwise it first opens the system's, /var/log/nginx/error.log).
    const std::string output_path = prefix_ + "output.log";
    int output = open(output_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (output < 0) {
        int error = errno;
        stop();
        throw std::runtime_error("nginx: " + output_path + ": " + errno_message("open", error));
    }
    pid_ = spawn({install.nginx, "-p", prefix_, "-c", prefix_ + "nginx.conf", "-e",
                  prefix_ + "error.log"},
                 output, output, start_error);
    close(output);
    if (pid_ < 0) {
        stop();
        throw std::runtime_error("nginx: " + start_error);
    }

    const Clock::time_point deadline = Clock::now() + std::chrono::seconds(10);
    int status = 0;
    while (Clock::now() < deadline) {
        if (waitpid(pid_, &status, WNOHANG) == pid_) {
            pid_ = -1;  // it exited (a bad configuration, a port already taken): reaped
            break;
        }
        if (answers(settings.port, "/status/204", 204)) {
            url_ = "http://127.0.0.1:" + std::to_string(settings.port) + "/";
            return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::string said = last_line_of(prefix_ + "error.log");
    if (said.empty()) {
        said = last_line_of(output_path);
    }
    stop();
    throw std::runtime_error("nginx did not start" + (said.empty() ? "" : ": " + said));
}

NginxProcess::~NginxProcess() { stop(); }

void NginxProcess::stop() {
    if (pid_ >= 0) {
        terminate_child(pid_);
        pid_ = -1;
    }
    if (!prefix_.empty()) {
        std::error_code ignored;  // a directory left in /tmp is not worth failing for
        std::filesystem::remove_all(prefix_, ignored);
        prefix_.clear();
    }
}

}  // namespace sixways::lab
