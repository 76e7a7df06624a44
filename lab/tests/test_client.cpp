#include "lab/tests/test_client.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <stdexcept>

namespace sixways::lab::test {
namespace {

timeval to_timeval(std::chrono::milliseconds duration) {
    timeval value{};
    value.tv_sec = static_cast<time_t>(duration.count() / 1000);
    value.tv_usec = static_cast<suseconds_t>((duration.count() % 1000) * 1000);
    return value;
}

std::string lower(std::string_view text) {
    std::string result(text);
    for (char& c : result) {
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
    return result;
}

// Takes one CRLF-terminated line off the front of `bytes`; false when there is none.
bool take_line(std::string_view& bytes, std::string_view& line) {
    const std::size_t end = bytes.find("\r\n");
    if (end == std::string_view::npos) return false;
    line = bytes.substr(0, end);
    bytes.remove_prefix(end + 2);
    return true;
}

// "Name: value" lines up to an empty line.
bool take_fields(std::string_view& bytes, std::vector<std::pair<std::string, std::string>>& fields,
                 std::string& error) {
    std::string_view line;
    while (take_line(bytes, line)) {
        if (line.empty()) return true;
        const std::size_t colon = line.find(':');
        if (colon == std::string_view::npos) {
            error = "a header line without a colon";
            return false;
        }
        std::string_view value = line.substr(colon + 1);
        while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
        fields.emplace_back(lower(line.substr(0, colon)), std::string(value));
    }
    error = "the head is incomplete";
    return false;
}

}  // namespace

Client::Client(const std::string& host, std::uint16_t port, std::chrono::milliseconds timeout)
    : timeout_(timeout) {
    sockaddr_storage storage{};
    socklen_t length = 0;
    auto* v4 = reinterpret_cast<sockaddr_in*>(&storage);
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&storage);
    if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(port);
        length = sizeof *v4;
    } else if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(port);
        length = sizeof *v6;
    } else {
        throw std::runtime_error("not an address: " + host);
    }
    fd_ = socket(storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
    const timeval limit = to_timeval(timeout);
    // SO_SNDTIMEO also bounds connect() on Linux.
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
    if (connect(fd_, reinterpret_cast<const sockaddr*>(&storage), length) != 0) {
        const int error = errno;
        ::close(fd_);
        fd_ = -1;
        throw std::runtime_error(std::string("connect: ") + std::strerror(error));
    }
}

Client::~Client() { close(); }

void Client::close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

void Client::send(std::string_view bytes) {
    while (!bytes.empty()) {
        const ssize_t sent = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        if (sent < 0) {
            if (errno == EINTR) continue;
            throw std::runtime_error(std::string("send: ") + std::strerror(errno));
        }
        bytes.remove_prefix(static_cast<std::size_t>(sent));
    }
}

// Reads until `done(bytes so far)`, the end, an error or the timeout.
ReadResult Client::read_until_done(const std::function<bool(const std::string&)>& done) {
    ReadResult result;
    char buffer[64 * 1024];
    while (!done(result.bytes)) {
        const ssize_t received = recv(fd_, buffer, sizeof buffer, 0);
        if (received > 0) {
            result.bytes.append(buffer, static_cast<std::size_t>(received));
        } else if (received == 0) {
            result.closed = true;
            break;
        } else if (errno != EINTR) {
            result.error = errno == EWOULDBLOCK ? EAGAIN : errno;
            break;
        }
    }
    return result;
}

ReadResult Client::read_at_least(std::size_t count) {
    return read_until_done([count](const std::string& bytes) { return bytes.size() >= count; });
}

ReadResult Client::read_until(std::string_view marker) {
    return read_until_done(
        [marker](const std::string& bytes) { return bytes.find(marker) != std::string::npos; });
}

ReadResult Client::read_to_end() { return read_at_least(std::string::npos); }

ReadResult Client::read_for(std::chrono::milliseconds wait) {
    ReadResult result;
    const auto deadline = std::chrono::steady_clock::now() + wait;
    char buffer[64 * 1024];
    while (true) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) break;
        pollfd ready{fd_, POLLIN, 0};
        const int count = poll(&ready, 1, static_cast<int>(left.count()));
        if (count < 0 && errno == EINTR) continue;
        if (count <= 0) break;
        const ssize_t received = recv(fd_, buffer, sizeof buffer, 0);
        if (received > 0) {
            result.bytes.append(buffer, static_cast<std::size_t>(received));
        } else if (received == 0) {
            result.closed = true;
            break;
        } else if (errno != EINTR) {
            result.error = errno;
            break;
        }
    }
    return result;
}

std::string request_text(std::string_view target, std::string_view method, std::string_view host) {
    return std::string(method) + " " + std::string(target) + " HTTP/1.1\r\nHost: " +
           std::string(host) + "\r\nUser-Agent: lab-tests\r\nConnection: close\r\n\r\n";
}

std::string Reply::header(std::string_view name) const {
    for (const auto& [key, value] : headers) {
        if (key == name) return value;
    }
    return "";
}

Reply parse_reply(std::string_view bytes, bool head_request) {
    Reply reply;
    const auto fail = [&](std::string why) {
        reply.status = 0;
        reply.error = std::move(why);
        return reply;
    };
    while (true) {
        std::string_view line;
        if (!take_line(bytes, line)) return fail("no status line");
        reply.status_line = std::string(line);
        int code = 0;
        if (!line.starts_with("HTTP/1.1 ") || line.size() < 12 ||
            std::from_chars(line.data() + 9, line.data() + 12, code).ptr != line.data() + 12) {
            return fail("a bad status line: " + reply.status_line);
        }
        reply.headers.clear();
        if (!take_fields(bytes, reply.headers, reply.error)) return fail(reply.error);
        if (code >= 200) {
            reply.status = code;
            break;
        }
        reply.interim_statuses.push_back(code);
    }
    if (head_request || reply.status == 204 || reply.status == 304) return reply;

    if (lower(reply.header("transfer-encoding")) == "chunked") {
        reply.chunked = true;
        while (true) {
            std::string_view line;
            if (!take_line(bytes, line)) return fail("a chunk size line is missing");
            const std::size_t semicolon = line.find(';');
            const std::string_view digits = line.substr(0, semicolon);
            if (semicolon != std::string_view::npos) {
                reply.chunk_extensions.emplace_back(line.substr(semicolon));
            }
            std::size_t size = 0;
            const auto [end, error] =
                std::from_chars(digits.data(), digits.data() + digits.size(), size, 16);
            if (digits.empty() || error != std::errc() || end != digits.data() + digits.size()) {
                return fail("a bad chunk size line: " + std::string(line));
            }
            if (size == 0) break;
            if (bytes.size() < size + 2 || bytes.substr(size, 2) != "\r\n") {
                return fail("a chunk is cut short");
            }
            reply.body.append(bytes.substr(0, size));
            bytes.remove_prefix(size + 2);
        }
        std::string error;
        if (!take_fields(bytes, reply.trailers, error)) return fail("the trailer: " + error);
        return reply;
    }
    const std::string length_text = reply.header("content-length");
    if (length_text.empty()) {
        reply.body = std::string(bytes);  // delimited by the close
        return reply;
    }
    std::size_t length = 0;
    std::from_chars(length_text.data(), length_text.data() + length_text.size(), length);
    if (bytes.size() < length) {
        return fail("the body is cut short: " + std::to_string(bytes.size()) + " of " +
                    std::to_string(length) + " bytes");
    }
    reply.body = std::string(bytes.substr(0, length));
    return reply;
}

std::string expected_body(std::string_view target, std::uint64_t id, std::size_t n) {
    std::string body = "path=" + std::string(target) + " id=" + std::to_string(id) + "\n";
    const std::string_view line = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.\n";
    while (body.size() < n) body += line;
    body.resize(n);
    return body;
}

Reply fetch(std::uint16_t port, std::string_view target, std::string_view method,
            const std::string& host) {
    try {
        Client client(host, port);
        const bool ipv6 = host.find(':') != std::string::npos;
        const std::string host_header = (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
        client.send(request_text(target, method, host_header));
        const ReadResult result = client.read_to_end();
        if (!result.closed) {
            Reply reply;
            reply.error = std::string("no close from the server: ") + std::strerror(result.error);
            return reply;
        }
        return parse_reply(result.bytes, method == "HEAD");
    } catch (const std::exception& error) {
        Reply reply;
        reply.error = error.what();
        return reply;
    }
}

bool has_ipv6_loopback() {
    const int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;  // a kernel without IPv6
    sockaddr_in6 address{};
    address.sin6_family = AF_INET6;
    address.sin6_addr = in6addr_loopback;
    address.sin6_port = 0;  // any free port: only whether ::1 exists matters
    const bool bound = bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0;
    ::close(fd);
    return bound;
}

}  // namespace sixways::lab::test
