// labserver [--host ADDR]... [--port 8080] [--delay 100ms] [--head-timeout 10s] [--help]
//
// The lab bench's server as a program: parse the options, bind, say where it listens, serve until
// Ctrl-C (SIGINT) or SIGTERM, then exit 0.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>

#include <atomic>
#include <cerrno>
#include <iostream>
#include <string>
#include <vector>

#include "common/duration.hpp"
#include "common/limits.hpp"
#include "common/standard_streams.hpp"
#include "lab/labserver.hpp"

namespace {

using sixways::lab::LabServer;
using sixways::lab::LabServerOptions;

constexpr const char* usage =
    "usage: labserver [--host ADDR]... [--port PORT] [--delay DURATION]\n"
    "                 [--head-timeout DURATION] [--help]\n"
    "\n"
    "The lab bench's HTTP server: every answer to a plain path waits DURATION, and it is fast at\n"
    "everything else. Paths: /, /delay/MS, /bytes/N, /chunked/N, /redirect/K, /status/CODE,\n"
    "/fault/NAME, /site/, /stats (see lab/README.md).\n"
    "\n"
    "  --host ADDR      an IPv4 or IPv6 address to listen on; repeat for several\n"
    "                   (default: 127.0.0.1 and ::1)\n"
    "  --port PORT      the port on every host, 0 for a free one (default 8080)\n"
    "  --delay DURATION before each answer to a plain path: 2, 2.5s, 250ms (default 100ms)\n"
    "  --head-timeout DURATION\n"
    "                   close a connection whose request head is not complete this long\n"
    "                   after it was accepted (default 10s)\n"
    "  --help           this text\n";

// The signal handler may only do async-signal-safe things: LabServer::stop() is one write() to an
// eventfd. A lock-free atomic pointer is safe to read in a handler.
std::atomic<LabServer*> running_server{nullptr};

extern "C" void on_stop_signal(int) {
    const int saved_errno = errno;  // a handler must not change errno under the code it interrupted
    if (LabServer* server = running_server.load()) server->stop();
    errno = saved_errno;
}

int usage_error(const std::string& message) {
    std::cerr << "labserver: " << message << "\n(labserver --help shows the options)\n";
    return 2;
}

bool is_address(const std::string& text) {
    in6_addr ignored{};
    return inet_pton(AF_INET, text.c_str(), &ignored) == 1 ||
           inet_pton(AF_INET6, text.c_str(), &ignored) == 1;
}

bool parse_port(const std::string& text, std::uint16_t& port) {
    if (text.empty() || text.size() > 5) return false;
    unsigned value = 0;
    for (char c : text) {
        if (c < '0' || c > '9') return false;
        value = value * 10 + static_cast<unsigned>(c - '0');
    }
    if (value > 65535) return false;
    port = static_cast<std::uint16_t>(value);
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    static_assert(std::atomic<LabServer*>::is_always_lock_free);
    sixways::open_standard_streams();  // first: see common/standard_streams.hpp
    LabServerOptions options;
    std::vector<std::string> hosts;
    const std::vector<std::string> args(argv + 1, argv + argc);
    for (std::size_t i = 0; i < args.size(); ++i) {
        std::string name = args[i];
        if (name == "--help" || name == "-h") {
            std::cout << usage;
            return 0;
        }
        // "--port 8080" and "--port=8080" both work.
        std::string value;
        bool has_value = false;
        if (const auto equals = name.find('='); name.starts_with("--") && equals != std::string::npos) {
            value = name.substr(equals + 1);
            name.resize(equals);
            has_value = true;
        }
        if (name != "--host" && name != "--port" && name != "--delay" && name != "--head-timeout") {
            return usage_error("unknown argument '" + args[i] + "'");
        }
        if (!has_value) {
            if (i + 1 == args.size()) return usage_error(name + " needs a value");
            value = args[++i];
        }
        if (name == "--host") {
            if (!is_address(value)) {
                return usage_error("--host takes an IPv4 or IPv6 address, not '" + value + "'");
            }
            hosts.push_back(value);
        } else if (name == "--port") {
            if (!parse_port(value, options.port)) {
                return usage_error("--port takes a number from 0 to 65535, not '" + value + "'");
            }
        } else if (name == "--delay") {
            try {
                options.delay = sixways::parse_duration(value);
            } catch (const sixways::DurationError& error) {
                return usage_error(std::string("--delay: ") + error.what());
            }
        } else {
            try {
                options.head_timeout = sixways::parse_duration(value);
            } catch (const sixways::DurationError& error) {
                return usage_error(std::string("--head-timeout: ") + error.what());
            }
            if (options.head_timeout <= sixways::Duration::zero()) {
                return usage_error("--head-timeout must be more than 0, not '" + value + "'");
            }
        }
    }
    if (!hosts.empty()) options.hosts = hosts;  // each --host replaces the defaults

    // Every connection is a descriptor: raise the soft limit as far as the hard limit allows.
    const long descriptor_limit = sixways::raise_open_file_limit();

    try {
        LabServer server(options);
        running_server = &server;
        struct sigaction action {};
        action.sa_handler = on_stop_signal;
        sigemptyset(&action.sa_mask);
        sigaction(SIGINT, &action, nullptr);
        sigaction(SIGTERM, &action, nullptr);

        // The first line is what scripts wait for (and read the port from, with --port 0), so it is
        // flushed at once: stdout is fully buffered when it is a pipe.
        std::cout << "listening on " << server.url("/") << " (delay "
                  << sixways::format_duration(options.delay) << ")" << std::endl;
        std::cerr << "labserver: descriptor limit " << descriptor_limit << "; Ctrl-C stops\n";

        server.run();

        running_server = nullptr;
        const sixways::lab::LabStats stats = server.stats();
        std::cerr << "labserver: stopped after " << stats.accepted << " connections and "
                  << stats.requests << " requests\n";
    } catch (const std::exception& error) {
        running_server = nullptr;
        std::cerr << error.what() << "\n";
        return 1;
    }
    return 0;
}
