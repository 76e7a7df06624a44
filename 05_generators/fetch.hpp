// Stage 05: the fetch as one generator, and a small epoll loop that runs many of them.
//
// Stage 04 split each request into callbacks and kept its state (socket, bytes sent, parser) in an
// object, because a callback returns and its locals are gone. Here the fetch is written once, top
// to bottom, like stage 01's blocking code. Where stage 01 blocked, it yields what it waits for
// (`co_yield Wait{fd, Interest::writable}`) and is suspended; its locals stay in its coroutine
// frame. The loop waits with epoll for the descriptors of all suspended fetches and resumes
// whichever is ready, sending back what happened (Event::ready or Event::timed_out).
#pragma once

#include <type_traits>
#include <vector>

#include "05_generators/generator.hpp"
#include "common/descriptor.hpp"
#include "common/fetch.hpp"

namespace sixways::generators {

// What a fetch waits for: "resume me when this descriptor is readable / writable".
enum class Interest { readable, writable };
struct Wait {
    int fd;
    Interest interest;
};

// What the loop sends back into the co_yield: the descriptor is ready (or has an error or a hang-up
// to report, which the next system call will show), or the request's deadline passed first.
enum class Event { ready, timed_out };

// A fetch yields Waits and receives Events. Its contract with the loop: it records
// result.timing.start before its first wait (the loop counts the deadline from it), waits on one
// descriptor at a time and closes a socket it stops waiting on; after Event::timed_out it finishes
// (writes its timeout result and returns) rather than waiting again.
using Fetch = Generator<Wait, Event>;

// The fetch writes `co_yield Wait{fd, interest}`: an aggregate temporary that is alive while the
// body is suspended, and may be destroyed with the frame (close()). g++ 12 has bugs that destroy
// such temporaries of co_await/co_yield expressions twice. A Wait has nothing to destroy, so they
// cannot bite; were it to hold a std::string, the fetch would have to name it in a local first.
static_assert(std::is_trivially_destructible_v<Wait>);

// The lesson (fetch.cpp): one request, straight-line. Connects to each of request.addresses in
// turn, sends the GET, receives the response. Writes everything into `result` (the timing as it
// goes, then the response or the error) and is finished when `result` is final.
// Both references must outlive the generator: fetch_all's vectors do.
Fetch fetch_one(const Request& request, const Options& options, Result& result);

// The same fetch split into sub-generators (connect, send, receive), each driven from the outer
// one by hand (fetch_split.cpp): it works, and shows why generators do not compose.
Fetch fetch_one_split(const Request& request, const Options& options, Result& result);

// The loop (fetch.cpp): runs one `fetch` generator per request, at most options.concurrency at
// once, and calls options.on_result as each one finishes. Returns the results in request order.
using FetchOne = Fetch (*)(const Request&, const Options&, Result&);
std::vector<Result> run_fetches(const std::vector<Request>& requests, const Options& options,
                                FetchOne fetch);

// The library call of this stage: run_fetches with fetch_one.
std::vector<Result> fetch_all(const std::vector<Request>& requests, const Options& options);

// ---- Small pieces that fetch.cpp and fetch_split.cpp share ----

// One recv() of what is there, fed to the parser. Returns what recv() returned (-1 with errno set).
// Its buffer is on the stack of whoever resumed the fetch, not in the coroutine frame: it is needed
// only until the bytes are in the parser, never across a co_yield, and a frame exists per request.
ssize_t receive_into(int fd, ResponseParser& parser);

}  // namespace sixways::generators
