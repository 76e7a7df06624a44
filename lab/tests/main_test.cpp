// The labserver program: its command line, its first line, its signals, and what it does when it
// runs out of descriptors. Each test runs the real binary as a child process.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "lab/tests/test_client.hpp"

namespace sixways::lab {
namespace {

using namespace std::chrono_literals;

// A child process running labserver with its stdout and stderr on pipes. The destructor kills it
// if it is still running, so a failed test leaves no process behind.
class Child {
public:
    // open_files_limit > 0 sets both RLIMIT_NOFILE limits in the child before exec.
    explicit Child(std::vector<std::string> args, rlim_t open_files_limit = 0) {
        int out[2];
        int err[2];
        if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
        args.insert(args.begin(), LABSERVER_BINARY);
        std::vector<char*> argv;
        for (std::string& arg : args) argv.push_back(arg.data());
        argv.push_back(nullptr);
        pid_ = fork();
        if (pid_ == 0) {
            // Only async-signal-safe calls between fork and exec.
            dup2(out[1], STDOUT_FILENO);
            dup2(err[1], STDERR_FILENO);
            if (open_files_limit > 0) {
                const rlimit limit{open_files_limit, open_files_limit};
                setrlimit(RLIMIT_NOFILE, &limit);
            }
            execv(argv[0], argv.data());
            _exit(127);
        }
        close(out[1]);
        close(err[1]);
        stdout_ = out[0];
        stderr_ = err[0];
    }

    ~Child() {
        if (pid_ > 0) {
            kill(pid_, SIGKILL);
            waitpid(pid_, nullptr, 0);
        }
        close(stdout_);
        close(stderr_);
    }

    pid_t pid() const { return pid_; }

    // The first line on stdout, without its newline ("" if none came within two seconds).
    std::string first_line() {
        std::string line;
        char c = 0;
        while (line.find('\n') == std::string::npos) {
            pollfd ready{stdout_, POLLIN, 0};
            if (poll(&ready, 1, 2000) != 1 || read(stdout_, &c, 1) != 1) return line;
            line += c;
        }
        line.pop_back();
        return line;
    }

    // Everything left on a pipe, once the child has exited.
    static std::string rest_of(int fd) {
        std::string text;
        char buffer[4096];
        ssize_t count;
        while ((count = read(fd, buffer, sizeof buffer)) > 0) text.append(buffer, count);
        return text;
    }
    std::string rest_of_stdout() { return rest_of(stdout_); }
    std::string rest_of_stderr() { return rest_of(stderr_); }

    // Waits (at most five seconds) for the child to exit; returns its exit status, or -1.
    int wait_for_exit() {
        for (int i = 0; i < 500; ++i) {
            int status = 0;
            const pid_t done = waitpid(pid_, &status, WNOHANG);
            if (done == pid_) {
                pid_ = -1;
                return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
            }
            usleep(10'000);
        }
        return -1;
    }

    // How long the process has been runnable so far, in seconds: on a CPU or waiting in the run
    // queue for one (/proc/PID/schedstat). A process that spins is runnable all the time, however
    // busy the machine is; its CPU time alone would shrink on a loaded machine and hide the spin.
    // Returns -1 when the kernel does not provide the figures.
    double runnable_seconds() const {
        std::ifstream file("/proc/" + std::to_string(pid_) + "/schedstat");
        double on_cpu_ns = 0;
        double waiting_ns = 0;
        if (!(file >> on_cpu_ns >> waiting_ns)) return -1;
        return (on_cpu_ns + waiting_ns) / 1e9;
    }

private:
    pid_t pid_ = -1;
    int stdout_ = -1;
    int stderr_ = -1;
};

// "listening on http://127.0.0.1:PORT/ (delay ...)" -> PORT, or 0.
std::uint16_t port_from(const std::string& line) {
    std::smatch match;
    if (!std::regex_match(line, match, std::regex(R"(listening on http://[^ ]+:(\d+)/ \(delay .*\))"))) {
        return 0;
    }
    return static_cast<std::uint16_t>(std::stoi(match[1]));
}

TEST(LabServerProgram, PrintsWhereItListensFirstAndExitsCleanlyOnSigterm) {
    Child child({"--port", "0", "--delay", "50ms"});
    const std::string line = child.first_line();
    const std::uint16_t port = port_from(line);
    ASSERT_NE(port, 0) << line;
    EXPECT_EQ(line, "listening on http://127.0.0.1:" + std::to_string(port) + "/ (delay 50 ms)");
    EXPECT_EQ(test::fetch(port, "/", "GET", "127.0.0.1").status, 200);
    // By default it listens on ::1 too, where the machine has it (a container may not).
    if (test::has_ipv6_loopback()) {
        EXPECT_EQ(test::fetch(port, "/", "GET", "::1").status, 200);
    }
    kill(child.pid(), SIGTERM);
    EXPECT_EQ(child.wait_for_exit(), 0);
}

TEST(LabServerProgram, ExitsCleanlyOnCtrlC) {
    if (!test::has_ipv6_loopback()) GTEST_SKIP() << "no IPv6 loopback here";
    Child child({"--port", "0", "--host", "::1"});
    const std::string line = child.first_line();
    const std::uint16_t port = port_from(line);
    ASSERT_NE(port, 0) << line;
    EXPECT_EQ(line, "listening on http://[::1]:" + std::to_string(port) + "/ (delay 100 ms)");
    kill(child.pid(), SIGINT);
    EXPECT_EQ(child.wait_for_exit(), 0);
    EXPECT_NE(child.rest_of_stderr().find("stopped after"), std::string::npos);
}

TEST(LabServerProgram, ExitsWith2AndSaysWhyForBadArguments) {
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"--port", "70000"}, {"--port", "-1"}, {"--port"},
          {"--delay", "soon"}, {"--delay", "-1s"}, {"--host", "localhost"}, {"--verbose"},
          {"--head-timeout", "0"}, {"--head-timeout", "soon"}, {"--head-timeout"}, {"extra"}}) {
        Child child(args);
        EXPECT_EQ(child.wait_for_exit(), 2) << args[0];
        EXPECT_EQ(child.rest_of_stdout(), "") << args[0];
        EXPECT_NE(child.rest_of_stderr().find("labserver: "), std::string::npos) << args[0];
    }
}

TEST(LabServerProgram, PrintsUsageForHelp) {
    Child child({"--help"});
    EXPECT_EQ(child.wait_for_exit(), 0);
    const std::string usage = child.rest_of_stdout();
    EXPECT_TRUE(usage.starts_with("usage: labserver"));
    EXPECT_NE(usage.find("--head-timeout"), std::string::npos);
}

// Clients that connect and never send their head take every descriptor the server has (32 here,
// room for about 25 connections); the head timeout closes them, so the one behind them in the
// listen queue is answered. Without it, that client would wait for ever.
TEST(LabServerProgram, ClosesSilentConnectionsAfterTheHeadTimeoutSoOthersGetServed) {
    Child child({"--port", "0", "--host", "127.0.0.1", "--delay", "0", "--head-timeout", "300ms"}, 32);
    const std::uint16_t port = port_from(child.first_line());
    ASSERT_NE(port, 0);
    std::vector<std::unique_ptr<test::Client>> silent;
    for (int i = 0; i < 40; ++i) silent.push_back(std::make_unique<test::Client>("127.0.0.1", port, 1000ms));

    test::Client patient("127.0.0.1", port, 10'000ms);
    patient.send(test::request_text("/after-the-silent-ones"));
    EXPECT_EQ(test::parse_reply(patient.read_to_end().bytes).status, 200);
    for (auto& client : silent) EXPECT_TRUE(client->read_to_end().closed);
    kill(child.pid(), SIGTERM);
    EXPECT_EQ(child.wait_for_exit(), 0);
}

TEST(LabServerProgram, ExitsWith1WhenItsPortIsTaken) {
    Child first({"--port", "0", "--host", "127.0.0.1"});
    const std::uint16_t port = port_from(first.first_line());
    ASSERT_NE(port, 0);
    Child second({"--port=" + std::to_string(port), "--host=127.0.0.1"});
    EXPECT_EQ(second.wait_for_exit(), 1);
    EXPECT_NE(second.rest_of_stderr().find("Address already in use"), std::string::npos);
}

// With 32 descriptors the server can hold only about 25 connections; 100 clients wait in the listen
// queue and are served as descriptors free up, in about four rounds of the delay. A server that
// kept retrying accept() would be runnable all that time instead of sleeping in epoll_wait.
TEST(LabServerProgram, KeepsServingWithoutSpinningWhenOutOfDescriptors) {
    Child child({"--port", "0", "--host", "127.0.0.1", "--delay", "300ms"}, 32);
    const std::uint16_t port = port_from(child.first_line());
    ASSERT_NE(port, 0);
    const double runnable_before = child.runnable_seconds();
    if (runnable_before < 0) GTEST_SKIP() << "no /proc/PID/schedstat on this kernel";
    const auto start = std::chrono::steady_clock::now();

    constexpr int count = 100;
    std::vector<std::unique_ptr<test::Client>> clients;
    for (int i = 0; i < count; ++i) {
        clients.push_back(std::make_unique<test::Client>("127.0.0.1", port, 10'000ms));
        clients.back()->send(test::request_text("/many/" + std::to_string(i)));
    }
    int answered = 0;
    for (auto& client : clients) {
        if (test::parse_reply(client->read_to_end().bytes).status == 200) ++answered;
    }
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double runnable = child.runnable_seconds() - runnable_before;

    EXPECT_EQ(answered, count);
    EXPECT_LT(runnable, wall / 2) << "runnable " << runnable << " s of " << wall << " s";
    kill(child.pid(), SIGTERM);
    EXPECT_EQ(child.wait_for_exit(), 0);
    // The limit was really reached (otherwise this test would prove nothing).
    EXPECT_NE(child.rest_of_stderr().find("Too many open files"), std::string::npos);
}

}  // namespace
}  // namespace sixways::lab
