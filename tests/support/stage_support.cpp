#include "tests/support/stage_support.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <utility>

#include "common/address.hpp"
#include "common/url.hpp"

namespace sixways::testing_support {

using namespace std::chrono_literals;

// ---- Requests, options, a lab server on loopback ----

Request request_for(const std::string& url) {
    Request request;
    request.url = parse_url(url);
    request.addresses = resolve(request.url);
    return request;
}

lab::LabServerOptions on_loopback(Duration delay, std::vector<std::string> hosts) {
    lab::LabServerOptions options;
    options.hosts = std::move(hosts);
    options.port = 0;
    options.delay = delay;
    return options;
}

Options with_timeout(Duration timeout, std::size_t concurrency) {
    Options options;
    options.timeout = timeout;
    options.concurrency = concurrency;
    return options;
}

std::vector<Request> numbered_requests(const lab::LabServer& server, int count) {
    std::vector<Request> requests;
    for (int k = 0; k < count; ++k) {
        requests.push_back(request_for(server.url("/numbered/" + std::to_string(k))));
    }
    return requests;
}

void expect_each_numbered_body(const std::vector<Result>& results) {
    for (std::size_t k = 0; k < results.size(); ++k) {
        ASSERT_TRUE(results[k].ok()) << k << ": " << results[k].error_message;
        EXPECT_NE(results[k].response.body.find("/numbered/" + std::to_string(k)),
                  std::string::npos)
            << results[k].response.body;
    }
}

std::size_t most_in_flight(const std::vector<Result>& results) {
    std::vector<std::pair<Clock::time_point, int>> events;  // +1 at start, -1 at done
    for (const Result& result : results) {
        events.emplace_back(result.timing.start, +1);
        events.emplace_back(result.timing.done, -1);
    }
    std::sort(events.begin(), events.end());  // at equal times -1 sorts before +1
    std::size_t in_flight = 0, most = 0;
    for (const auto& [time, change] : events) {
        in_flight = change > 0 ? in_flight + 1 : in_flight - 1;
        most = std::max(most, in_flight);
    }
    return most;
}

int open_descriptors() {
    DIR* directory = ::opendir("/proc/self/fd");
    if (directory == nullptr) return -1;
    int count = 0;
    while (::readdir(directory) != nullptr) ++count;
    ::closedir(directory);
    return count - 3;  // ".", ".." and the directory's own descriptor
}

// ---- Peers that misbehave ----

namespace {

sockaddr_in loopback_address(std::uint16_t port) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(port);
    return address;
}

std::string url_on_loopback(std::uint16_t port, const std::string& path) {
    return "http://127.0.0.1:" + std::to_string(port) + path;
}

}  // namespace

int listen_on_loopback(int backlog, std::uint16_t& port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address = loopback_address(0);  // port 0: the kernel picks a free one
    socklen_t length = sizeof address;
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
        ::listen(fd, backlog) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
        const int error = errno;
        if (fd >= 0) ::close(fd);
        throw std::runtime_error(errno_message("cannot listen on 127.0.0.1", error));
    }
    port = ntohs(address.sin_port);
    return fd;
}

EndlessTrickle::EndlessTrickle()
    : listener_(listen_on_loopback(1, port_)), thread_([this] { serve(); }) {}

EndlessTrickle::~EndlessTrickle() {
    stop_ = true;
    thread_.join();
    ::close(listener_);
}

std::string EndlessTrickle::url() const { return url_on_loopback(port_, "/"); }

void EndlessTrickle::serve() {
    // accept() gives up every 100 ms, so that the thread can see stop_ if no client comes.
    const timeval tenth{0, 100'000};
    ::setsockopt(listener_, SOL_SOCKET, SO_RCVTIMEO, &tenth, sizeof tenth);
    int client = -1;
    while (!stop_ && client < 0) client = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) return;
    const std::string response =
        "HTTP/1.1 200 OK\r\nContent-Length: 260\r\n\r\n" + std::string(260, 'x');
    for (char byte : response) {
        if (stop_ || ::send(client, &byte, 1, MSG_NOSIGNAL) != 1) break;  // the client left
        std::this_thread::sleep_for(10ms);
    }
    ::close(client);
}

FullBacklog::FullBacklog() : listener_(listen_on_loopback(0, port_)) {
    // A backlog of 0 leaves room for one finished handshake; eight connections surely fill it.
    const sockaddr_in address = loopback_address(port_);
    for (int i = 0; i < 8; ++i) {
        const int filler = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        ::connect(filler, reinterpret_cast<const sockaddr*>(&address), sizeof address);
        fillers_.push_back(filler);
    }
}

FullBacklog::~FullBacklog() {
    for (int filler : fillers_) ::close(filler);
    ::close(listener_);
}

std::string FullBacklog::url() const { return url_on_loopback(port_, "/"); }

SilentServer::SilentServer() : listener_(listen_on_loopback(4096, port_)) {}

SilentServer::~SilentServer() { ::close(listener_); }

std::string SilentServer::url() const { return url_on_loopback(port_, "/silent"); }

int SilentServer::accept() {
    // 30 s: a client under a sanitizer on a loaded machine can take seconds to build a large
    // request before it connects. The bound only matters when the client never comes.
    pollfd entry{listener_, POLLIN, 0};
    if (::poll(&entry, 1, 30'000) != 1) throw std::runtime_error("no connection to accept");
    return ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
}

DescriptorsLeft::DescriptorsLeft(int count) {
    ::getrlimit(RLIMIT_NOFILE, &saved_);
    const int lowest_free = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    ::close(lowest_free);
    rlimit lowered = saved_;
    lowered.rlim_cur = static_cast<rlim_t>(lowest_free + count);
    ::setrlimit(RLIMIT_NOFILE, &lowered);
}

DescriptorsLeft::~DescriptorsLeft() { restore(); }

void DescriptorsLeft::restore() { ::setrlimit(RLIMIT_NOFILE, &saved_); }


Watchdog::Watchdog(std::string what, Duration bound)
    : thread_([this, what = std::move(what), bound] {
          std::unique_lock lock(mutex_);
          if (!dismissed_.wait_for(lock, bound, [this] { return done_; })) {
              std::fprintf(stderr, "%s did not return within %s: it hangs\n", what.c_str(),
                           format_duration(bound).c_str());
              std::abort();
          }
      }) {}

Watchdog::~Watchdog() {
    {
        std::lock_guard lock(mutex_);
        done_ = true;
    }
    dismissed_.notify_one();
    thread_.join();
}

ClientSockets client_sockets_to(std::uint16_t port) {
    ClientSockets found;
    for (int fd = 0; fd < 1024; ++fd) {
        struct stat status {};
        if (::fstat(fd, &status) != 0 || !S_ISSOCK(status.st_mode)) continue;
        sockaddr_in peer{};
        socklen_t length = sizeof peer;
        if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &length) != 0) continue;
        if (peer.sin_family != AF_INET || ntohs(peer.sin_port) != port) continue;
        ++found.open;
        if ((::fcntl(fd, F_GETFL) & O_NONBLOCK) != 0) ++found.non_blocking;
    }
    return found;
}

}  // namespace sixways::testing_support
