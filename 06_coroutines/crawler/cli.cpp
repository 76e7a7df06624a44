// The crawl program: parse, resolve every root before the loop starts, crawl, report.
#include "06_coroutines/crawler/cli.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>

#include "06_coroutines/crawler/crawler.hpp"
#include "06_coroutines/crawler/report.hpp"
#include "common/limits.hpp"

namespace sixways::crawler {

namespace {

constexpr const char* default_root = "http://127.0.0.1:8080/site/";  // the lab server's site

std::size_t parse_number(const std::string& text, const std::string& option, std::size_t minimum,
                         std::size_t maximum) {
    std::size_t value = 0;
    const char* end = text.data() + text.size();
    const auto [stop, error] = std::from_chars(text.data(), end, value);
    if (text.empty() || error != std::errc() || stop != end || value < minimum || value > maximum) {
        throw UsageError(option + " must be a whole number from " + std::to_string(minimum) + " to " +
                         std::to_string(maximum) + ", not '" + text + "'");
    }
    return value;
}

Url parse_root(const std::string& text) {
    try {
        return parse_url(text);
    } catch (const UrlError& error) {
        throw UsageError("root URL '" + text + "': " + error.what());
    }
}

// One ADDR of --resolve, with the port, as an Address.
Address parse_address(std::string text, std::uint16_t port, const std::string& option) {
    Address address;
    if (text.size() >= 2 && text.front() == '[' && text.back() == ']') {
        sockaddr_in6 ipv6{};
        ipv6.sin6_family = AF_INET6;
        ipv6.sin6_port = htons(port);
        if (inet_pton(AF_INET6, text.substr(1, text.size() - 2).c_str(), &ipv6.sin6_addr) == 1) {
            std::memcpy(&address.storage, &ipv6, sizeof ipv6);
            address.length = sizeof ipv6;
            return address;
        }
    } else {
        sockaddr_in ipv4{};
        ipv4.sin_family = AF_INET;
        ipv4.sin_port = htons(port);
        if (inet_pton(AF_INET, text.c_str(), &ipv4.sin_addr) == 1) {
            std::memcpy(&address.storage, &ipv4, sizeof ipv4);
            address.length = sizeof ipv4;
            return address;
        }
    }
    throw UsageError("--resolve '" + option + "': '" + text +
                     "' is not an IP address (IPv4, or IPv6 in brackets: [::1])");
}

}  // namespace

std::pair<std::string, std::vector<Address>> parse_resolve(const std::string& text) {
    // HOST:PORT:ADDR[,ADDR...]. The host and port are checked by the URL parser, so a --resolve
    // entry accepts exactly the hosts a URL may name.
    const std::size_t first = text.find(':');
    const std::size_t second = first == std::string::npos ? std::string::npos : text.find(':', first + 1);
    if (second == std::string::npos || second + 1 == text.size()) {
        throw UsageError("--resolve '" + text + "' must look like HOST:PORT:ADDR, e.g. a.test:8080:127.0.0.1");
    }
    Url url;
    try {
        url = parse_url("http://" + text.substr(0, second) + "/");
    } catch (const UrlError& error) {
        throw UsageError("--resolve '" + text + "': " + error.what());
    }
    std::vector<Address> addresses;
    std::string rest = text.substr(second + 1);
    for (std::size_t start = 0; start <= rest.size();) {
        std::size_t comma = rest.find(',', start);
        if (comma == std::string::npos) comma = rest.size();
        addresses.push_back(parse_address(rest.substr(start, comma - start), url.port, text));
        start = comma + 1;
    }
    return {host_key(url), std::move(addresses)};
}

CrawlCli parse_crawl_cli(const std::vector<std::string>& args) {
    CrawlCli cli;
    bool strict_given = false;
    bool lenient_given = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        if (arg == "-h" || arg == "--help") {
            cli.help = true;
            return cli;
        }
        if (!arg.starts_with("-")) {
            cli.roots.push_back(parse_root(arg));
            continue;
        }
        // "--name=value" and "--name value" mean the same.
        const std::size_t equals = arg.find('=');
        const std::string name = arg.substr(0, equals);
        const bool takes_value = name == "--max-tasks" || name == "--max-redirect" || name == "--max-tries" ||
                                 name == "--max-pages" || name == "--exclude" || name == "--timeout" ||
                                 name == "--resolve";
        if (!takes_value) {
            if (equals != std::string::npos) throw UsageError("option " + name + " takes no value");
            if (name == "--json") {
                cli.json = true;
            } else if (name == "--strict") {
                strict_given = true;
            } else if (name == "--lenient") {
                lenient_given = true;
            } else {
                throw UsageError("unknown option '" + arg + "'");
            }
            continue;
        }
        std::string value;
        if (equals != std::string::npos) {
            value = arg.substr(equals + 1);
        } else if (i + 1 < args.size() && !args[i + 1].starts_with("--")) {
            value = args[++i];
        } else {
            throw UsageError("option " + name + " needs a value");
        }
        if (name == "--max-tasks") {
            cli.max_tasks = parse_number(value, name, 1, 10000);
        } else if (name == "--max-redirect") {
            cli.max_redirect = parse_number(value, name, 0, 1000);
        } else if (name == "--max-tries") {
            cli.max_tries = parse_number(value, name, 1, 100);
        } else if (name == "--max-pages") {
            cli.max_pages = parse_number(value, name, 1, 1'000'000'000);
        } else if (name == "--exclude") {
            try {
                check_pattern(value);  // here too, to report a bad one as bad usage before anything is resolved
            } catch (const std::invalid_argument& error) {
                throw UsageError(std::string("--exclude: ") + error.what());
            }
            cli.exclude.push_back(value);
        } else if (name == "--timeout") {
            try {
                cli.timeout = parse_duration(value);
            } catch (const DurationError& error) {
                throw UsageError(std::string("--timeout: ") + error.what());
            }
            if (cli.timeout <= Duration::zero()) throw UsageError("--timeout must be more than 0, not '" + value + "'");
        } else {  // --resolve
            auto [key, addresses] = parse_resolve(value);
            std::vector<Address>& entry = cli.resolved[key];
            entry.insert(entry.end(), addresses.begin(), addresses.end());
        }
    }
    if (strict_given && lenient_given) throw UsageError("--strict and --lenient cannot both be given");
    cli.strict = !lenient_given;
    if (cli.roots.empty()) cli.roots.push_back(parse_url(default_root));
    return cli;
}

std::string crawl_usage() {
    return std::string(
               "usage: crawl [ROOT_URL ...] [--max-tasks 10] [--max-redirect 10] [--max-tries 4]\n"
               "             [--max-pages N] [--exclude PATTERN] [--strict|--lenient]\n"
               "             [--timeout DURATION] [--resolve HOST:PORT:ADDR] [--json] [--help]\n"
               "\n"
               "Crawls a web site from each ROOT_URL (default ") +
           default_root +
           ", the lab server's site),\n"
           "following links in HTML pages and redirects, on stage 06's event loop: a queue of URLs\n"
           "and --max-tasks worker coroutines. Only http:// URLs on the roots' hosts are followed.\n"
           "\n"
           "  ROOT_URL            where to start, http://host[:port]/path; several may be given\n"
           "  --max-tasks N       workers: at most N fetches in flight at once (default 10)\n"
           "  --max-redirect N    redirects followed from one URL (default 10)\n"
           "  --max-tries N       tries per URL when the connection fails (default 4)\n"
           "  --max-pages N       queue at most N URLs, roots included (default: no limit); the\n"
           "                      report says how many links the limit left unfollowed\n"
           "  --exclude PATTERN   skip URLs that match PATTERN, a whole URL as the report writes\n"
           "                      it, in which * stands for any run of characters: '*.pdf',\n"
           "                      'http://h/private/*' (repeatable)\n"
           "  --strict            follow only the roots' exact hosts (the default)\n"
           "  --lenient           also the root's domain (without \"www.\") and its subdomains\n"
           "  --timeout DURATION  deadline per fetch: 2, 2.5s, 250ms (default 10 s)\n"
           "  --resolve H:P:ADDR  connect to ADDR for host H, port P (as curl does; repeatable;\n"
           "                      ADDR is IPv4 or [IPv6], several separated by commas)\n"
           "  --json              print one JSON object on stdout instead of the text report\n"
           "  -h, --help          print this help and exit\n"
           "\n"
           "Host names are resolved once, before the crawl starts (getaddrinfo blocks, and a\n"
           "blocked event loop stops every worker), so only the roots' hosts and --resolve hosts\n"
           "are ever fetched. Options that take a value also accept --name=value.\n"
           "An exclude pattern is not a regular expression: only * is special, and a pattern\n"
           "starts with http:// or *. It is matched without recursion, so no pattern and no\n"
           "link, however long, can crash the crawl.\n"
           "Workers are capped at what the descriptor limit allows (one socket each), with a\n"
           "message on stderr.\n"
           "Exit status: 0 the crawl finished and every URL got a response (of any status: a\n"
           "404 is an answer), 1 some URLs got none after all their tries (the report lists them,\n"
           "stderr says how many) or the crawl could not start (a root that does not resolve),\n"
           "2 bad usage, 130 interrupted by Ctrl-C (after printing what was done).\n";
}

std::size_t workers_within_descriptor_limit(std::size_t wanted, long limit, long in_use) {
    const long free_for_sockets = limit - (in_use < 0 ? 3 : in_use) - descriptor_reserve;
    if (free_for_sockets <= 0) return 0;
    return std::min(wanted, static_cast<std::size_t>(free_for_sockets));
}

namespace {

// Ctrl-C, as something the loop waits for. SIGINT and SIGTERM are blocked and read from a
// signalfd, a descriptor that becomes readable when one is pending, so the loop sees them like any
// socket: no signal handler runs in the middle of a step. The first one cancels the crawl, which
// cancels the workers and waits for them (a turn or two); a second one quits at once.
class InterruptWatch {
public:
    InterruptWatch(EventLoop& loop, coroutines::Task<void> crawling) : loop_(loop) {
        sigemptyset(&signals_);
        sigaddset(&signals_, SIGINT);
        sigaddset(&signals_, SIGTERM);
        sigprocmask(SIG_BLOCK, &signals_, &previous_);
        fd_ = signalfd(-1, &signals_, SFD_NONBLOCK | SFD_CLOEXEC);
        if (fd_ < 0) {
            // No signalfd: unblock again, so that Ctrl-C keeps its default action (it ends the
            // program without a report) instead of being held back for ever.
            sigprocmask(SIG_SETMASK, &previous_, nullptr);
            return;
        }
        auto on_signal = [this, crawling]() mutable {
            signalfd_siginfo info{};
            if (::read(fd_, &info, sizeof info) != static_cast<ssize_t>(sizeof info)) return;
            if (signal_ != 0) _exit(128 + static_cast<int>(info.ssi_signo));
            signal_ = static_cast<int>(info.ssi_signo);
            crawling.cancel();
        };
        loop_.add_reader(fd_, on_signal);
    }
    ~InterruptWatch() {
        if (fd_ >= 0) {
            loop_.remove_reader(fd_);
            ::close(fd_);
        }
        sigprocmask(SIG_SETMASK, &previous_, nullptr);
    }
    InterruptWatch(const InterruptWatch&) = delete;
    InterruptWatch& operator=(const InterruptWatch&) = delete;

    int signal() const { return signal_; }  // 0 if none came

private:
    EventLoop& loop_;
    sigset_t signals_{};
    sigset_t previous_{};
    int fd_ = -1;
    int signal_ = 0;
};

// "crawl: 12 done, 5 to do" on stderr, rewritten in place a few times a second, only on a terminal.
class Progress {
public:
    Progress(EventLoop& loop, const Crawler& crawler) : loop_(loop), crawler_(crawler) {
        if (isatty(STDERR_FILENO) == 1) tick();
    }
    ~Progress() {
        timer_.cancel();
        if (width_ > 0) std::fprintf(stderr, "\r%*s\r", static_cast<int>(width_), "");
    }
    Progress(const Progress&) = delete;
    Progress& operator=(const Progress&) = delete;

private:
    void tick() {
        std::string line = "crawl: " + std::to_string(crawler_.done().size()) + " done, " +
                           std::to_string(crawler_.todo()) + " to do";
        width_ = std::max(width_, line.size());
        line.resize(width_, ' ');
        std::fprintf(stderr, "\r%s", line.c_str());
        std::fflush(stderr);
        timer_ = loop_.call_later(std::chrono::milliseconds(200), [this] { tick(); });
    }

    EventLoop& loop_;
    const Crawler& crawler_;
    coroutines::TimerHandle timer_;
    std::size_t width_ = 0;
};

}  // namespace

int run_crawl(int argc, char** argv) {
    CrawlCli cli;
    try {
        cli = parse_crawl_cli(std::vector<std::string>(argv + std::min(argc, 1), argv + argc));
    } catch (const UsageError& error) {
        std::fprintf(stderr, "crawl: %s\ntry 'crawl --help'\n", error.what());
        return 2;
    }
    if (cli.help) {
        std::fputs(crawl_usage().c_str(), stdout);
        return 0;
    }
    // Each worker holds a socket: 1000 workers under a limit of 64 descriptors would see most of
    // their fetches fail with EMFILE. So the workers are capped at what the limit allows.
    const long descriptor_limit = raise_open_file_limit();
    const long descriptors_in_use = open_descriptor_count();
    const std::size_t workers = workers_within_descriptor_limit(cli.max_tasks, descriptor_limit, descriptors_in_use);
    if (workers == 0) {
        std::fprintf(stderr, "crawl: the descriptor limit (%ld) leaves no descriptor for a connection\n",
                     descriptor_limit);
        return 1;
    }
    if (workers < cli.max_tasks) {
        std::fprintf(stderr,
                     "crawl: --max-tasks %zu is more than the descriptor limit allows (%ld, %ld in use): "
                     "%zu workers\n",
                     cli.max_tasks, descriptor_limit, descriptors_in_use, workers);
    }

    // Resolve each root's host once, now, before the loop runs: getaddrinfo blocks, and blocking
    // inside the loop would stop every worker. A host given with --resolve is not looked up.
    CrawlerOptions options;
    options.addresses = cli.resolved;
    for (const Url& root : cli.roots) {
        const std::string key = host_key(root);
        if (options.addresses.contains(key)) continue;
        try {
            options.addresses[key] = resolve(root);
        } catch (const ResolveError& error) {
            std::fprintf(stderr, "crawl: %s: %s\n", root.to_string().c_str(), error.what());
            return 1;
        }
    }
    options.roots = cli.roots;
    options.exclude = cli.exclude;
    options.strict = cli.strict;
    options.max_redirect = cli.max_redirect;
    options.max_tries = cli.max_tries;
    options.max_pages = cli.max_pages;
    options.max_tasks = workers;
    options.timeout = cli.timeout;

    try {
        EventLoop loop;
        Crawler crawler(loop, options);
        coroutines::Task<void> crawling = loop.create_task(crawler.crawl(), "crawl");
        // Ctrl-C stays blocked (and read from the loop) until the report is out: one that comes
        // while it is being printed must not cut it off.
        InterruptWatch interrupts(loop, crawling);
        bool interrupted = false;
        {
            Progress progress(loop, crawler);
            try {
                loop.run_until_complete(crawling);
            } catch (const coroutines::CancelledError&) {
                interrupted = true;
            }
        }
        const CrawlReport report = make_report(crawler, interrupted);
        const std::string output = cli.json ? format_json(report) + "\n" : format_text(report);
        std::fputs(output.c_str(), stdout);
        std::fflush(stdout);
        // A crawl where URLs failed must not look like a clean one to a script: it says so on
        // stderr (the report may be JSON on a pipe) and exits 1.
        const std::size_t failed = failed_urls(report);
        if (failed > 0) {
            std::fprintf(stderr, "crawl: %zu of %zu URLs failed (listed in the report)\n", failed,
                         report.fetches.size());
        }
        if (interrupted) return 128 + (interrupts.signal() != 0 ? interrupts.signal() : SIGINT);
        return failed > 0 ? 1 : 0;
    } catch (const std::exception& error) {
        std::fprintf(stderr, "crawl: %s\n", error.what());
        return 1;
    }
}

}  // namespace sixways::crawler
