// Stage 02, written by you: a thread per request, each running stage 01's fetch.
//
// Check it with `lab/check.sh 02 mine/02.cpp`; write until every line says [ok]. This file takes
// the place of 02_threads/tiny.cpp: the same fetch_all (declared in 02_threads/tiny.hpp), built
// with the same main. Chapter 02 explains each step; 02_threads/tiny.cpp is one answer.
//
// As given, it compiles and every request fails with "not written yet". Fill in the places marked
// WRITE.
#include "02_threads/tiny.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include "common/descriptor.hpp"

namespace sixways::threads::tiny {

// A failed system call is that request's error: `limit` if something ran out (EMFILE: no
// descriptor left, ...), else `otherwise`, with what failed and why ("connect: Connection
// refused"). Result::fail also sets timing.done.
Result failed(Result& result, ErrorKind otherwise, const char* call, int error) {
    result.fail(kind_for_errno(error, otherwise), errno_message(call, error));
    return result;
}

// One request, top to bottom: connect, send, receive, on blocking sockets.
Result fetch(const Request& request, const Options& options) {
    // WRITE: your fetch() from stage 01 (mine/01.cpp), unchanged. Then remove the lines below.
    (void)request;
    (void)options;
    Result result;
    result.timing.start = Clock::now();
    result.fail(ErrorKind::connect, "not written yet");
    return result;
}

// Every request at once: a std::thread each, all started, then every one joined. Thread k writes
// results[k] only, and tells options.on_result(k, results[k]) when it is set (from its own thread:
// the command line's callback takes a mutex). Make `results` its full size before the first thread
// starts: a vector that grows moves its elements while other threads write them. A thread the
// system refuses throws std::system_error: fail that request as ErrorKind::limit
// (failed(result, ErrorKind::limit, "std::thread", error.code().value())), and go on.
std::vector<Result> fetch_all(const std::vector<Request>& requests, const Options& options) {
    std::vector<Result> results(requests.size());
    // WRITE. Then remove the loop below, which runs one request after another, as stage 01 did.
    for (std::size_t index = 0; index < requests.size(); ++index) {
        results[index] = fetch(requests[index], options);
        if (options.on_result) options.on_result(index, results[index]);
    }
    return results;
}

}  // namespace sixways::threads::tiny
