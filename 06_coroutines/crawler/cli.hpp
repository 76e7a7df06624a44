// The crawl program around the Crawler: the command line, resolving names before the loop starts,
// Ctrl-C, the report. Not the lesson (crawler.cpp is); main.cpp is one call to run_crawl.
//
//   crawl [ROOT_URL ...] [--max-tasks 10] [--max-redirect 10] [--max-tries 4] [--max-pages N]
//         [--exclude PATTERN] [--strict|--lenient] [--timeout DURATION] [--resolve HOST:PORT:ADDR]
//         [--json] [--help]
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/address.hpp"
#include "common/cli.hpp"
#include "common/duration.hpp"
#include "common/url.hpp"

namespace sixways::crawler {

struct CrawlCli {
    std::vector<Url> roots;  // default: the lab server's site, http://127.0.0.1:8080/site/
    std::size_t max_tasks = 10;
    std::size_t max_redirect = 10;
    std::size_t max_tries = 4;
    std::size_t max_pages = 0;  // 0: no limit
    std::vector<std::string> exclude;  // --exclude, repeatable: patterns as Crawler takes them
    bool strict = true;
    Duration timeout = std::chrono::seconds(10);
    std::map<std::string, std::vector<Address>> resolved;  // from --resolve, by host_key
    bool json = false;
    bool help = false;
};

// Parses the arguments after the program name. Throws UsageError (common/cli.hpp) saying what is
// wrong: "--max-tasks must be a whole number from 1 to 10000, not '0'".
CrawlCli parse_crawl_cli(const std::vector<std::string>& args);

// curl's --resolve: "HOST:PORT:ADDR[,ADDR...]" -> {host_key, addresses}, where an ADDR is an IPv4
// address or an IPv6 address in brackets ("[::1]"). Throws UsageError.
std::pair<std::string, std::vector<Address>> parse_resolve(const std::string& text);

std::string crawl_usage();

// Descriptors the crawl needs besides its workers' sockets: standard input, output and error are
// counted as in use; this is the event loop's epoll instance, the signalfd that reads Ctrl-C, and
// a few to spare.
inline constexpr long descriptor_reserve = 8;

// How many workers fit in the descriptor limit: each holds one socket at a time, and
// `limit - in_use - descriptor_reserve` descriptors are free for them. `wanted` when that many
// fit; 0 when not even one does. An `in_use` of -1 (unknown) counts as 3: stdin, stdout, stderr.
std::size_t workers_within_descriptor_limit(std::size_t wanted, long limit, long in_use);

// The whole program. Returns the exit status: 0 the crawl finished and every URL got a response
// (of any status: a 404 is an answer), 1 some URLs got none after all their tries (the report
// says which, and stderr how many) or the crawl could not start (a root that does not resolve),
// 2 bad usage, 128 + the signal number (130 for Ctrl-C) when interrupted, after printing what it
// has.
int run_crawl(int argc, char** argv);

}  // namespace sixways::crawler
