// The descriptor limit and the count of descriptors in use.
#include "common/limits.hpp"

#include <unistd.h>

#include <gtest/gtest.h>

namespace sixways {
namespace {

TEST(OpenDescriptorCount, CountsEachDescriptorThisProcessOpensAndCloses) {
    const long before = open_descriptor_count();
    ASSERT_GE(before, 3) << "stdin, stdout and stderr at least";
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    EXPECT_EQ(open_descriptor_count(), before + 2);
    close(fds[0]);
    close(fds[1]);
    EXPECT_EQ(open_descriptor_count(), before);
}

TEST(RaiseOpenFileLimit, LeavesRoomForTheDescriptorsInUse) {
    EXPECT_GT(raise_open_file_limit(), open_descriptor_count());
}

}  // namespace
}  // namespace sixways
