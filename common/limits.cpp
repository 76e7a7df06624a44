// The descriptor limit. Every socket is a descriptor, and the default soft limit (often 1024) is far
// below what 10,000 concurrent requests need. The hard limit is the ceiling an unprivileged process
// may raise its soft limit to, so we raise it that far and let the kernel say no beyond that.
#include "common/limits.hpp"

#include <sys/resource.h>

#include <filesystem>
#include <limits>
#include <system_error>

namespace sixways {

long raise_open_file_limit() {
    rlimit limit{};
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0) {
        return -1;  // cannot happen for RLIMIT_NOFILE; report "unknown" rather than guess
    }
    if (limit.rlim_cur < limit.rlim_max) {
        rlimit raised = limit;
        raised.rlim_cur = limit.rlim_max;
        // May fail (a hard limit of RLIM_INFINITY is above the kernel's fs.nr_open); then the old
        // soft limit stays in force, which is what we report.
        if (setrlimit(RLIMIT_NOFILE, &raised) == 0) {
            limit = raised;
        }
    }
    if (limit.rlim_cur == RLIM_INFINITY ||
        limit.rlim_cur > static_cast<rlim_t>(std::numeric_limits<long>::max())) {
        return std::numeric_limits<long>::max();
    }
    return static_cast<long>(limit.rlim_cur);
}

long open_descriptor_count() {
    // Listing the directory opens a descriptor of its own, which the listing shows too.
    namespace fs = std::filesystem;
    std::error_code error;
    long count = 0;
    for (fs::directory_iterator at("/proc/self/fd", error); !error && at != fs::directory_iterator();
         at.increment(error)) {
        ++count;
    }
    return error ? -1 : count - 1;
}

}  // namespace sixways
