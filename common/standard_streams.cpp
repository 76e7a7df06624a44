#include "common/standard_streams.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace sixways {

void open_standard_streams() {
    for (int fd = 0; fd <= 2; ++fd) {
        if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;  // open
        // The lower ones are open by now, so this is the lowest free number: open() returns fd.
        const int opened = ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
        if (opened == fd) continue;
        if (opened >= 0) ::close(opened);
        // Said with write(): stderr may be the very stream that is closed.
        constexpr const char message[] = "cannot open /dev/null for a closed standard stream\n";
        if (::fcntl(STDERR_FILENO, F_GETFD) != -1) {
            (void)!::write(STDERR_FILENO, message, sizeof message - 1);
        }
        std::_Exit(EXIT_FAILURE);
    }
}

}  // namespace sixways
