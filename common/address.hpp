// Where to connect: the addresses a host name resolves to.
#pragma once

#include <sys/socket.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "common/url.hpp"

namespace sixways {

struct Address {
    sockaddr_storage storage{};
    socklen_t length = 0;

    int family() const { return storage.ss_family; }  // AF_INET or AF_INET6
    const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&storage); }
    std::string to_string() const;  // "127.0.0.1:8080", "[::1]:8080"
};

class ResolveError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Resolves url.host once, up front, with getaddrinfo (TCP, any family, in the order the resolver
// prefers). getaddrinfo blocks; an event loop cannot afford to block, so every stage resolves before
// it starts and the fetchers only connect. Throws ResolveError ("resolve: Name or service not known").
std::vector<Address> resolve(const Url& url);

}  // namespace sixways
