// What the stages' own tests share, written once: requests for a lab server on loopback, how many
// requests were in flight at once, how many descriptors are open, and hand-made peers that
// misbehave in ways the lab server does not (bytes trickled for ever, a handshake that never
// completes, a listener that never answers), plus a lower descriptor limit. Link the CMake target
// `sixways_test_support`.
#pragma once

#include <sys/resource.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/duration.hpp"
#include "common/fetch.hpp"
#include "lab/labserver.hpp"

namespace sixways::testing_support {

// ---- Requests, options, a lab server on loopback ----

// A request for `url`, its host resolved up front as the command line does.
Request request_for(const std::string& url);

// A lab server on a free port of 127.0.0.1 (or of `hosts`) that waits `delay` before each answer.
lab::LabServerOptions on_loopback(Duration delay, std::vector<std::string> hosts = {"127.0.0.1"});

// Options with a deadline for each request; concurrency 0 means all requests at once.
Options with_timeout(Duration timeout, std::size_t concurrency = 0);

// `count` requests for /numbered/0, /numbered/1, ...: each body echoes its path, so a result can be
// matched to its request.
std::vector<Request> numbered_requests(const lab::LabServer& server, int count);

// Each result of numbered_requests succeeded and carries the body of its own request.
void expect_each_numbered_body(const std::vector<Result>& results);

// The most requests whose [start, done] spans overlap at any instant. A request ends before one
// that starts at the same instant, as a concurrency slot is handed from one to the next.
std::size_t most_in_flight(const std::vector<Result>& results);

// How many descriptors this process has open, or -1 if /proc/self/fd cannot be read. Compare two
// counts to find a leak.
int open_descriptors();

// Aborts the test binary, saying why, if it is not dismissed (destroyed) within `bound`: a hung
// fetcher must fail its test rather than hang the whole run until an outer timeout kills it
// silently. "<what> did not return within 60 s: it hangs".
class Watchdog {
public:
    Watchdog(std::string what, Duration bound);
    ~Watchdog();
    Watchdog(const Watchdog&) = delete;
    Watchdog& operator=(const Watchdog&) = delete;

private:
    std::mutex mutex_;
    std::condition_variable dismissed_;
    bool done_ = false;
    std::thread thread_;  // last: it starts once the members it uses exist
};

// ---- Peers that misbehave ----

// A listening socket on 127.0.0.1 bound to a free port, which is written to `port`. Throws
// std::runtime_error if that is impossible.
int listen_on_loopback(int backlog, std::uint16_t& port);

// A server for one connection that sends its response one byte every 10 ms, headers included, and
// needs three seconds to finish, ten times the tests' deadline. Each recv() gets a byte quickly, so
// only a deadline on the whole request, not a timeout on each call, ends it sooner.
class EndlessTrickle {
public:
    EndlessTrickle();
    ~EndlessTrickle();
    EndlessTrickle(const EndlessTrickle&) = delete;
    EndlessTrickle& operator=(const EndlessTrickle&) = delete;
    std::string url() const;

private:
    void serve();

    std::uint16_t port_ = 0;
    int listener_;
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

// A listening socket that never accepts, with its queue of finished handshakes already full. The
// kernel then drops every new handshake (SYN) to it, so a connect() neither succeeds nor fails:
// the client retries for minutes, unless it gives up first.
class FullBacklog {
public:
    FullBacklog();
    ~FullBacklog();
    FullBacklog(const FullBacklog&) = delete;
    FullBacklog& operator=(const FullBacklog&) = delete;
    std::string url() const;

private:
    std::uint16_t port_ = 0;
    int listener_;
    std::vector<int> fillers_;
};

// A listening socket on 127.0.0.1 that answers nothing unless a test accepts a connection and
// writes to it: the kernel completes handshakes into its backlog (room for thousands), so a fetch
// connects and sends, then waits for an answer that never comes. It runs on no thread of its own,
// so once made it allocates nothing while a test measures memory. Destroyed, its port refuses.
class SilentServer {
public:
    SilentServer();
    ~SilentServer();
    SilentServer(const SilentServer&) = delete;
    SilentServer& operator=(const SilentServer&) = delete;
    // "http://127.0.0.1:PORT/silent"
    std::string url() const;
    // The next connection, waited for at most 5 s (std::runtime_error if none comes). The caller
    // owns the descriptor.
    int accept();

private:
    std::uint16_t port_ = 0;
    int listener_;
};

// Lowers the process's descriptor limit (RLIMIT_NOFILE) so that only `count` more descriptors can
// be opened and the next socket() after them fails with EMFILE, until restore() or the end of the
// scope. A new descriptor always takes the lowest free number, which must be below the limit: so
// the limit becomes that number plus `count` (fewer are left if a descriptor above the lowest free
// one is already open; with a count of 0 or 1 that cannot happen).
class DescriptorsLeft {
public:
    explicit DescriptorsLeft(int count);
    ~DescriptorsLeft();
    DescriptorsLeft(const DescriptorsLeft&) = delete;
    DescriptorsLeft& operator=(const DescriptorsLeft&) = delete;
    void restore();

private:
    rlimit saved_{};
};

// The sockets of this process connected to a server on `port` (the client's ends, not the
// server's), and how many of them are in non-blocking mode.
struct ClientSockets {
    int open = 0;
    int non_blocking = 0;
};
ClientSockets client_sockets_to(std::uint16_t port);

}  // namespace sixways::testing_support
