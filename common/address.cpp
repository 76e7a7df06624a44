// Name resolution, done once and up front.
//
// getaddrinfo() may send DNS queries and wait for the answers, and there is no way to make it
// non-blocking. A fetcher built on an event loop (stages 04 to 06) must never block, so every stage
// resolves before its loop starts and the fetchers only ever connect to addresses they were given.
// (Real event loops hand getaddrinfo to a thread pool: asyncio's loop.getaddrinfo does exactly that.)
#include "common/address.hpp"

#include <netdb.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <system_error>

namespace sixways {

std::string Address::to_string() const {
    // NI_NUMERICHOST | NI_NUMERICSERV: print the numbers, never ask a resolver for a name.
    char host[NI_MAXHOST];
    char port[NI_MAXSERV];
    int rc = getnameinfo(get(), length, host, sizeof host, port, sizeof port,
                         NI_NUMERICHOST | NI_NUMERICSERV);
    if (rc != 0) {
        return std::string("(unprintable address: ") + gai_strerror(rc) + ")";
    }
    if (family() == AF_INET6) {
        return std::string("[") + host + "]:" + port;
    }
    return std::string(host) + ":" + port;
}

namespace {

bool same_address(const Address& a, const Address& b) {
    // Each Address starts zeroed and receives exactly `length` bytes from getaddrinfo, so equal
    // addresses are equal byte for byte.
    return a.length == b.length && std::memcmp(&a.storage, &b.storage, a.length) == 0;
}

}  // namespace

std::vector<Address> resolve(const Url& url) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;        // IPv4 and IPv6, in the order the resolver prefers
    hints.ai_socktype = SOCK_STREAM;    // TCP only; otherwise each address comes back once per type
    hints.ai_flags = AI_NUMERICSERV;    // the port is a number, never a service name to look up
    // No AI_ADDRCONFIG: it hides ::1 on a machine whose only IPv6 address is loopback, and the lab
    // server listens on ::1.

    addrinfo* list = nullptr;
    std::string port = std::to_string(url.port);
    int rc = getaddrinfo(url.host.c_str(), port.c_str(), &hints, &list);
    int error_number = errno;
    if (rc != 0) {
        // EAI_SYSTEM means "look at errno"; gai_strerror would only say "System error".
        if (rc == EAI_SYSTEM) {
            throw ResolveError("resolve: " + std::generic_category().message(error_number));
        }
        throw ResolveError(std::string("resolve: ") + gai_strerror(rc));
    }
    std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> owner(list, &freeaddrinfo);

    std::vector<Address> addresses;
    for (const addrinfo* info = list; info != nullptr; info = info->ai_next) {
        if (info->ai_addrlen > sizeof(sockaddr_storage)) {
            continue;  // cannot happen for AF_INET/AF_INET6; never copy past the storage
        }
        Address address;
        std::memcpy(&address.storage, info->ai_addr, info->ai_addrlen);
        address.length = info->ai_addrlen;
        // /etc/hosts may list the same address twice (e.g. "localhost" on two lines); trying it
        // twice after it refused once only doubles the wait.
        bool seen = false;
        for (const Address& earlier : addresses) {
            seen = seen || same_address(earlier, address);
        }
        if (!seen) {
            addresses.push_back(address);
        }
    }
    if (addresses.empty()) {
        throw ResolveError("resolve: no address for " + url.host);
    }
    return addresses;
}

}  // namespace sixways
