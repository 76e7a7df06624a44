#include "naive_fetch.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <stdexcept>

#include "common/descriptor.hpp"

namespace sixways::exercise01 {

std::string naive_fetch(const Request& request) {
    if (request.addresses.empty()) throw std::runtime_error("resolve: no address to connect to");
    const Address& address = request.addresses.front();

    // sock = socket.socket()
    Descriptor socket(::socket(address.family(), SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!socket) throw std::runtime_error(errno_message("socket", errno));
    // sock.connect((host, 80)): may wait minutes for a server that drops the handshake.
    if (::connect(socket.fd(), address.get(), address.length) != 0) {
        throw std::runtime_error(errno_message("connect", errno));
    }
    // sock.send(request): one call, whatever it returns. (MSG_NOSIGNAL is kept: without it a
    // server that has closed its end would end the test binary with SIGPIPE.)
    const std::string bytes = build_get_request(request.url);
    if (::send(socket.fd(), bytes.data(), bytes.size(), MSG_NOSIGNAL) < 0) {
        throw std::runtime_error(errno_message("send", errno));
    }
    // response = sock.recv(1024): whatever has arrived when the first bytes come, at most 1024.
    char buffer[1024];
    const ssize_t n = ::recv(socket.fd(), buffer, sizeof buffer, 0);
    if (n < 0) throw std::runtime_error(errno_message("recv", errno));
    return std::string(buffer, static_cast<std::size_t>(n));
}

}  // namespace sixways::exercise01
