#include "06_coroutines/crawler/tests/test_site.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <system_error>

namespace sixways::crawler::testing {

namespace {

const char* reason(int status) {
    switch (status) {
        case 200: return "OK";
        case 301: return "Moved Permanently";
        case 302: return "Found";
        case 303: return "See Other";
        case 307: return "Temporary Redirect";
        case 404: return "Not Found";
        case 500: return "Internal Server Error";
        default: return "Status";
    }
}

// Reads up to the end of the request head, waiting at most a second for each piece. "" if the
// client went away or was too slow.
std::string read_head(int fd) {
    std::string head;
    char buffer[4096];
    while (head.find("\r\n\r\n") == std::string::npos && head.size() < 64 * 1024) {
        pollfd readable{fd, POLLIN, 0};
        if (::poll(&readable, 1, 1000) <= 0) return {};
        const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
        if (n <= 0) return {};
        head.append(buffer, static_cast<std::size_t>(n));
    }
    return head;
}

void send_all(int fd, const std::string& data) {
    std::size_t sent = 0;
    while (sent < data.size()) {
        const ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) return;  // the client left (it timed out, say): nothing more to do
        sent += static_cast<std::size_t>(n);
    }
}

}  // namespace

TestSite::TestSite() {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listener_ < 0) throw std::system_error(errno, std::generic_category(), "socket");
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = 0;
    socklen_t length = sizeof address;
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address) < 0 || ::listen(listener_, 128) < 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) < 0 ||
        ::pipe2(wake_pipe_, O_CLOEXEC) < 0) {
        const int error = errno;
        ::close(listener_);
        throw std::system_error(error, std::generic_category(), "test site");
    }
    port_ = ntohs(address.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
}

TestSite::~TestSite() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    stopped_.notify_all();
    const char byte = 'x';
    [[maybe_unused]] const ssize_t written = ::write(wake_pipe_[1], &byte, 1);
    acceptor_.join();
    // No new connection threads now: only the acceptor made them.
    for (std::thread& connection : connections_) connection.join();
    ::close(listener_);
    ::close(wake_pipe_[0]);
    ::close(wake_pipe_[1]);
}

std::string TestSite::url(const std::string& path, const std::string& host) const {
    return "http://" + host + ":" + std::to_string(port_) + path;
}

Address TestSite::address() const {
    sockaddr_in ipv4{};
    ipv4.sin_family = AF_INET;
    ipv4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ipv4.sin_port = htons(port_);
    Address address;
    std::memcpy(&address.storage, &ipv4, sizeof ipv4);
    address.length = sizeof ipv4;
    return address;
}

void TestSite::add(const std::string& path, Page page) {
    std::lock_guard lock(mutex_);
    pages_[path] = std::move(page);
}

void TestSite::add_page(const std::string& path, const std::vector<std::string>& links) {
    Page page;
    for (const std::string& link : links) page.body += "<a href=\"" + link + "\">a link</a>\n";
    add(path, std::move(page));
}

void TestSite::add_redirect(const std::string& path, const std::string& location, int status) {
    Page page;
    page.status = status;
    page.location = location;
    page.body = "moved";
    page.content_type = "text/plain";
    add(path, std::move(page));
}

std::size_t TestSite::requests_for(const std::string& path) const {
    std::lock_guard lock(mutex_);
    return static_cast<std::size_t>(std::count_if(requests_.begin(), requests_.end(), [&](const std::string& request) {
        return request.substr(request.find(' ') + 1) == path;
    }));
}

std::vector<std::string> TestSite::requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
}

std::size_t TestSite::total_requests() const {
    std::lock_guard lock(mutex_);
    return requests_.size();
}

std::size_t TestSite::most_in_flight() const {
    std::lock_guard lock(mutex_);
    return most_in_flight_;
}

void TestSite::accept_loop() {
    for (;;) {
        pollfd watched[2] = {{listener_, POLLIN, 0}, {wake_pipe_[0], POLLIN, 0}};
        if (::poll(watched, 2, -1) < 0) {
            if (errno == EINTR) continue;
            return;
        }
        if (watched[1].revents != 0) return;  // the destructor: stop
        const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) continue;
        std::lock_guard lock(mutex_);
        connections_.emplace_back([this, fd] { serve(fd); });
    }
}

void TestSite::serve(int fd) {
    const std::string head = read_head(fd);
    // "GET /path HTTP/1.1\r\n...Host: a.test:4242\r\n..."
    const std::size_t target_start = head.find(' ') + 1;
    const std::size_t target_end = head.find(' ', target_start);
    if (head.empty() || target_start == 0 || target_end == std::string::npos) {
        ::close(fd);
        return;
    }
    const std::string target = head.substr(target_start, target_end - target_start);
    std::string host;
    if (const std::size_t at = head.find("\r\nHost: "); at != std::string::npos) {
        host = head.substr(at + 8, head.find("\r\n", at + 8) - at - 8);
    }

    Page page;
    bool drop = false;
    {
        std::unique_lock lock(mutex_);
        requests_.push_back(host + " " + target);
        most_in_flight_ = std::max(most_in_flight_, ++in_flight_);
        const auto found = pages_.find(target);
        if (found == pages_.end()) {
            page.status = 404;
            page.body = "<p>no such page</p>";
        } else {
            page = found->second;
            drop = dropped_[target] < page.drop_first;
            if (drop) ++dropped_[target];
        }
        // The delay, cut short if the site is being destroyed.
        stopped_.wait_for(lock, page.delay, [this] { return stopping_; });
        // No longer in flight once the answer starts: the client may finish reading it and send
        // its next request before this thread gets to run again, and that must not look like two
        // requests at once.
        --in_flight_;
    }
    if (!drop) {
        std::string response = "HTTP/1.1 " + std::to_string(page.status) + " " + reason(page.status) + "\r\n";
        if (!page.content_type.empty()) response += "Content-Type: " + page.content_type + "\r\n";
        if (!page.location.empty()) response += "Location: " + page.location + "\r\n";
        response += "Content-Length: " + std::to_string(page.body.size()) + "\r\nConnection: close\r\n\r\n";
        send_all(fd, response + page.body);
    }
    ::close(fd);  // a dropped connection: closed before any byte, as a failing server would
}

}  // namespace sixways::crawler::testing
