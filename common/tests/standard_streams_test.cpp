// open_standard_streams: a program started with stdin, stdout or stderr closed gets /dev/null there,
// so that the next file or socket it opens does not become one of them.
#include "common/standard_streams.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace {

// Whether `fd` is open on /dev/null (the same device and inode).
bool on_dev_null(int fd) {
    struct stat of_fd {};
    struct stat of_null {};
    return ::fstat(fd, &of_fd) == 0 && ::stat("/dev/null", &of_null) == 0 &&
           of_fd.st_rdev == of_null.st_rdev && S_ISCHR(of_fd.st_mode);
}

// Runs `check` in a child process whose descriptors 0, 1 and 2 are closed, after
// open_standard_streams(); the child's exit status is what `check` returns (0: all is well).
template <class Check>
int in_a_child_with_streams_closed(Check check) {
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::close(0);
        ::close(1);
        ::close(2);
        sixways::open_standard_streams();
        ::_exit(check());
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

TEST(OpenStandardStreams, PutsDevNullOnEachClosedOne) {
    EXPECT_EQ(in_a_child_with_streams_closed([] {
                  return on_dev_null(0) && on_dev_null(1) && on_dev_null(2) ? 0 : 1;
              }),
              0);
}

TEST(OpenStandardStreams, LeavesTheNextDescriptorAboveTwo) {
    EXPECT_EQ(in_a_child_with_streams_closed([] {
                  const int next = ::open("/dev/null", O_RDONLY);
                  return next > 2 ? 0 : 1;
              }),
              0);
}

TEST(OpenStandardStreams, LeavesOpenOnesAsTheyAre) {
    int pipe_ends[2];
    ASSERT_EQ(::pipe(pipe_ends), 0);
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::dup2(pipe_ends[1], 1);  // stdout is the pipe, and must stay the pipe
        sixways::open_standard_streams();
        ::_exit(::write(1, "x", 1) == 1 ? 0 : 1);
    }
    ::close(pipe_ends[1]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    char byte = 0;
    EXPECT_EQ(::read(pipe_ends[0], &byte, 1), 1);
    EXPECT_EQ(byte, 'x');
    ::close(pipe_ends[0]);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

}  // namespace
