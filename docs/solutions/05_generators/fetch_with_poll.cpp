#include "fetch_with_poll.hpp"

#include <poll.h>

#include <cerrno>
#include <system_error>

#include "05_generators/fetch.hpp"

namespace sixways::solutions {

using generators::Event;
using generators::Fetch;
using generators::Interest;
using generators::Wait;

Result fetch_with_poll(const Request& request, const Options& options) {
    Result result;
    // Declared after `result`, so destroyed before it: the frame holds a reference to `result`.
    Fetch fetch = generators::fetch_one(request, options, result);
    if (!fetch.next()) return result;  // finished without waiting (no address, socket() refused)

    // The body has recorded its start time by its first co_yield; the deadline counts from it.
    const Clock::time_point deadline = deadline_after(result.timing.start, options.timeout);
    bool waiting = true;
    while (waiting) {  // each turn resumes the fetch once; after Event::timed_out it finishes
        const Wait wait = fetch.current();
        pollfd entry{};
        entry.fd = wait.fd;
        entry.events = wait.interest == Interest::readable ? POLLIN : POLLOUT;
        // Rounded up, as FetchLoop's epoll_wait timeout is: poll returns 0 only once it has passed.
        const int ready = ::poll(&entry, 1, milliseconds_until(Clock::now(), deadline));
        if (ready < 0) {
            if (errno == EINTR) continue;  // a signal handler ran: wait again
            throw std::system_error(errno, std::generic_category(), "poll");
        }
        // Ready (or an error or hang-up, which the fetch's next call will show), or out of time.
        waiting = fetch.send(ready == 0 ? Event::timed_out : Event::ready);
    }
    return result;
}

}  // namespace sixways::solutions
