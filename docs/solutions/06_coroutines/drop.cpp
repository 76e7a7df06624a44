// Chapter 06, part 2, "Who owns the frames", run: a request's task dropped while it waits for its
// answer. Build it, and run it under strace against the lab server (100 ms delay), from the
// repository's top folder:
//     cmake --build build --target solution_06_drop -j2
//     strace -e trace=epoll_ctl,close build/bin/solution_06_drop "$URL" 2>&1 | sed -n '/EPOLLOUT/,$p'
// It prints (strace writes to stderr, as the runtime's warning does; the addresses differ):
//     epoll_ctl(3, EPOLL_CTL_ADD, 4, {events=EPOLLOUT, data={u32=4, u64=4}}) = 0
//     epoll_ctl(3, EPOLL_CTL_DEL, 4, 0x7fff2b4429f4) = 0
//     epoll_ctl(3, EPOLL_CTL_ADD, 4, {events=EPOLLIN, data={u32=4, u64=4}}) = 0
//     Task was destroyed but it is pending!
//         <Task pending name=dropped wait_for=<Future pending>>
//     epoll_ctl(3, EPOLL_CTL_DEL, 4, 0x7fff2b442874) = 0
//     close(4)                                = 0
//     descriptors watched: 0
//     close(3)                                = 0
//     +++ exited with 0 +++
// Connected (the writer's ADD and DEL), the request sent, the answer awaited (the reader's ADD);
// then the last handle goes. Destroying the bottom frame destroys the frame it awaits, and so on up
// the stack; in exchange's frame the awaiter, which holds the wait at the top, goes before the
// Socket: the reader is removed (DEL), and only then is fd 4 closed. Nothing is left watched;
// close(3) is the loop's epoll descriptor.
#include <chrono>
#include <cstdio>
#include <optional>

#include "06_coroutines/fetch.hpp"
#include "06_coroutines/sleep.hpp"

using namespace sixways;
using namespace sixways::coroutines;
using namespace std::chrono_literals;

int main(int argc, char** argv) {
    if (argc != 2) return 2;  // usage: solution_06_drop URL
    const Url url = parse_url(argv[1]);
    const Request request{url, resolve(url)};
    const Options options;
    EventLoop loop;
    std::optional<Task<Result>> task = loop.create_task(fetch(loop, request, options), "dropped");
    // 50 ms: connected, the request sent, and the answer (100 ms after it) not there yet.
    loop.run_until_complete(sleep(loop, 50ms));
    task.reset();  // the last handle: the task is destroyed where it stands
    std::fprintf(stderr, "descriptors watched: %zu\n", loop.watched_descriptors());
}
