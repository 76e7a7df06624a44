#include "tests/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

extern char** environ;

namespace sixways::conformance {

namespace {

// Closes a descriptor exactly once, when it goes out of scope or on request.
class Descriptor {
public:
    explicit Descriptor(int fd = -1) : fd_(fd) {}
    ~Descriptor() { reset(); }
    Descriptor(const Descriptor&) = delete;
    Descriptor& operator=(const Descriptor&) = delete;

    int get() const { return fd_; }
    void reset() {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
    }

private:
    int fd_;
};

std::string system_error(const char* call, int error_number) {
    return std::string(call) + ": " + std::strerror(error_number);
}

}  // namespace

ChildOutput run_program(const std::string& program, const std::vector<std::string>& args,
                        Duration bound, const ChildStreams& streams) {
    // O_CLOEXEC: the child sees only the ends that posix_spawn moves onto its stdout and stderr, so
    // each pipe reaches end-of-file as soon as the child (and nothing else) has closed it.
    int out_fds[2];
    int err_fds[2];
    if (::pipe2(out_fds, O_CLOEXEC) != 0) throw std::runtime_error(system_error("pipe2", errno));
    Descriptor out_read(out_fds[0]), out_write(out_fds[1]);
    if (streams.stderr_on_terminal) {
        // The terminal's two ends: the child writes to the second, we read from the first. When
        // the child is gone, reading the first fails with EIO, which ends it as end-of-file does.
        if (::openpty(&err_fds[0], &err_fds[1], nullptr, nullptr, nullptr) != 0) {
            throw std::runtime_error(system_error("openpty", errno));
        }
        ::fcntl(err_fds[0], F_SETFD, FD_CLOEXEC);
        ::fcntl(err_fds[1], F_SETFD, FD_CLOEXEC);
    } else if (::pipe2(err_fds, O_CLOEXEC) != 0) {
        throw std::runtime_error(system_error("pipe2", errno));
    }
    Descriptor err_read(err_fds[0]), err_write(err_fds[1]);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (streams.close_stdin) {
        posix_spawn_file_actions_addclose(&actions, STDIN_FILENO);
    } else {
        posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    }
    if (streams.close_stdout) {
        posix_spawn_file_actions_addclose(&actions, STDOUT_FILENO);
    } else {
        posix_spawn_file_actions_adddup2(&actions, out_write.get(), STDOUT_FILENO);
    }
    if (streams.close_stderr) {
        posix_spawn_file_actions_addclose(&actions, STDERR_FILENO);
    } else {
        posix_spawn_file_actions_adddup2(&actions, err_write.get(), STDERR_FILENO);
    }

    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(program.c_str()));
    for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);

    pid_t pid = 0;
    const int spawn_error = ::posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (spawn_error != 0) throw std::runtime_error(system_error("posix_spawn", spawn_error) + ": " + program);

    // Only the child writes now; our copies of the write ends would keep the pipes from ever
    // reaching end-of-file.
    out_write.reset();
    err_write.reset();
    if (streams.started) streams.started(pid);

    ChildOutput output;
    const auto deadline = Clock::now() + bound;
    pollfd fds[2] = {{out_read.get(), POLLIN, 0}, {err_read.get(), POLLIN, 0}};
    std::string* sinks[2] = {&output.out, &output.err};
    int open_pipes = 2;
    while (open_pipes > 0) {
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
        if (left.count() <= 0) {
            ::kill(pid, SIGKILL);
            output.killed = true;
            break;
        }
        const int ready = ::poll(fds, 2, static_cast<int>(left.count()));
        if (ready < 0 && errno != EINTR) throw std::runtime_error(system_error("poll", errno));
        for (int i = 0; i < 2 && ready > 0; ++i) {
            if (fds[i].fd < 0 || fds[i].revents == 0) continue;
            char buffer[4096];
            const ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
            if (n > 0) {
                sinks[i]->append(buffer, static_cast<std::size_t>(n));
            } else if (n == 0 || errno != EINTR) {
                fds[i].fd = -1;  // end of file (or a broken pipe): poll ignores negative descriptors
                --open_pipes;
            }
        }
    }

    int status = 0;
    while (::waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) throw std::runtime_error(system_error("waitpid", errno));
    }
    if (WIFEXITED(status)) output.exit_status = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) output.exit_status = 128 + WTERMSIG(status);
    return output;
}

}  // namespace sixways::conformance
