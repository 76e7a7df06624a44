// The lab bench's HTTP server: slow on purpose (every answer waits `delay`), fast at everything else.
// One thread, one epoll loop, a timer structure for the delays: it must never be what a stage waits
// for. Used as the `labserver` binary and, in tests, in-process on port 0.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/duration.hpp"

namespace sixways::lab {

struct LabServerOptions {
    std::vector<std::string> hosts = {"127.0.0.1", "::1"};  // one listening socket each
    std::uint16_t port = 8080;                               // 0: a free port, the same on every host
    Duration delay = std::chrono::milliseconds(100);         // before each answer to a plain path
    // From the connection's accept until its request head is complete; then the connection is
    // closed. A client that never finishes its head must not hold a descriptor for ever.
    Duration head_timeout = std::chrono::seconds(10);
};

struct LabStats {
    std::uint64_t accepted = 0;          // connections accepted since start
    std::uint64_t open_connections = 0;  // connections open now
    std::uint64_t requests = 0;          // complete requests read since start
    std::map<std::string, std::uint64_t> requests_by_class;  // "plain", "delay", "bytes", "fault", ...
    std::map<std::string, std::uint64_t> requests_by_path;   // exact target -> count
};

class LabServer {
public:
    // Binds and listens on every host (throws std::runtime_error saying which bind failed).
    explicit LabServer(LabServerOptions options);
    ~LabServer();  // stops the loop and joins the thread if start() was used
    LabServer(const LabServer&) = delete;
    LabServer& operator=(const LabServer&) = delete;

    std::uint16_t port() const;
    // "http://127.0.0.1:PORT" + path (the first host; IPv6 hosts in brackets).
    std::string url(const std::string& path = "/") const;

    void run();   // serves on the calling thread until stop()
    void start(); // serves on a thread of its own (for tests)
    void stop();  // safe from any thread and from a signal handler

    LabStats stats() const;  // a consistent snapshot, safe from any thread

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace sixways::lab
