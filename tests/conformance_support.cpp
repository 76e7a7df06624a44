#include "tests/conformance_support.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>

#include "common/address.hpp"
#include "common/http.hpp"
#include "tests/support/stage_support.hpp"

namespace sixways::conformance {

using namespace std::chrono_literals;
using testing_support::on_loopback;
using testing_support::with_timeout;

Request request_for(const lab::LabServer& server, const std::string& path) {
    return testing_support::request_for(server.url(path));
}

std::uint64_t count_of(const std::map<std::string, std::uint64_t>& counts, const std::string& key) {
    const auto found = counts.find(key);
    return found == counts.end() ? 0 : found->second;
}

std::string describe(const Result& result) {
    if (!result.ok()) return std::string(to_string(result.error)) + " error: " + result.error_message;
    return std::to_string(result.response.status) + ", " + std::to_string(result.response.body_bytes) +
           " body bytes";
}

std::uint16_t port_with_nothing_listening() {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw std::runtime_error("socket failed");
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = 0;
    socklen_t length = sizeof address;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
        ::close(fd);
        throw std::runtime_error("bind to a free port failed");
    }
    ::close(fd);
    return ntohs(address.sin_port);
}

std::string raw_get(const lab::LabServer& server, const std::string& path) {
    const Request request = request_for(server, path);
    const Address& address = request.addresses.at(0);
    const int fd = ::socket(address.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw std::runtime_error("socket failed");
    std::string bytes;
    if (::connect(fd, address.get(), address.length) == 0) {
        const std::string wire = build_get_request(request.url);
        if (::send(fd, wire.data(), wire.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(wire.size())) {
            char buffer[64 * 1024];
            pollfd entry{fd, POLLIN, 0};
            while (::poll(&entry, 1, 10'000) > 0) {
                const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
                if (n <= 0) break;
                bytes.append(buffer, static_cast<std::size_t>(n));
            }
        }
    }
    ::close(fd);
    return bytes;
}

std::string body_of(const std::string& raw_response) {
    const auto end_of_head = raw_response.find("\r\n\r\n");
    return end_of_head == std::string::npos ? std::string() : raw_response.substr(end_of_head + 4);
}

std::string_view first_line(std::string_view body) { return body.substr(0, body.find('\n')); }

std::string_view after_first_line(std::string_view body) {
    const auto end = body.find('\n');
    return end == std::string_view::npos ? std::string_view() : body.substr(end + 1);
}

std::string first_difference(std::string_view got, std::string_view expected) {
    if (got == expected) return "";
    const auto mismatch = std::mismatch(got.begin(), got.end(), expected.begin(), expected.end());
    return "sizes " + std::to_string(got.size()) + " and " + std::to_string(expected.size()) +
           ", first difference at byte " + std::to_string(mismatch.first - got.begin());
}

std::vector<Result> fetch(const StageUnderTest& stage, const std::vector<Request>& requests,
                          const Options& options) {
    const testing_support::Watchdog watchdog(stage.name + "'s fetch_all", 60s);
    return stage.fetch_all(requests, options);
}

double elapsed_ms(const Result& result) {
    return std::chrono::duration<double, std::milli>(result.timing.done - result.timing.start).count();
}

double in_ms(Duration duration) { return std::chrono::duration<double, std::milli>(duration).count(); }

std::vector<Result> check_distinct_paths(const StageUnderTest& stage, std::size_t count, std::size_t concurrency) {
    lab::LabServer server(on_loopback(10ms));
    server.start();
    std::vector<std::string> targets;
    std::vector<Request> requests;
    for (std::size_t k = 0; k < count; ++k) {
        targets.push_back("/distinct/" + std::to_string(k) + "?x=" + std::to_string(k));
        requests.push_back(request_for(server, targets.back()));
    }

    // on_result may be called from several threads at once (stage 02): count under a lock.
    std::mutex mutex;
    std::vector<int> calls(count, 0);
    std::vector<std::string> bodies_reported(count);
    Options options = with_timeout(5s, concurrency);
    options.on_result = [&](std::size_t index, const Result& result) {
        std::lock_guard lock(mutex);
        if (index >= count) {
            ADD_FAILURE() << "on_result called with index " << index << " of " << count << " requests";
            return;
        }
        ++calls[index];
        bodies_reported[index] = result.response.body;
    };

    std::vector<Result> results = fetch(stage, requests, options);

    EXPECT_EQ(results.size(), count) << "exactly one result per request";
    std::set<std::string> request_ids;
    for (std::size_t i = 0; i < std::min(count, results.size()); ++i) {
        const Result& result = results[i];
        SCOPED_TRACE("request " + std::to_string(i) + ": " + targets[i]);
        EXPECT_EQ(calls[i], 1) << "on_result must be called exactly once for each request";
        if (!result.ok()) {
            ADD_FAILURE() << describe(result);
            continue;
        }
        EXPECT_EQ(result.response.status, 200);
        EXPECT_NE(result.response.body.find(targets[i]), std::string::npos)
            << "the body does not echo this request's own path: " << result.response.body;
        for (std::size_t j = 0; j < count; ++j) {
            if (j != i && result.response.body.find(targets[j]) != std::string::npos) {
                ADD_FAILURE() << "the body echoes another request's path " << targets[j] << ": "
                              << result.response.body;
            }
        }
        EXPECT_EQ(bodies_reported[i], result.response.body) << "on_result saw a different result";
        EXPECT_TRUE(result.timing.done > result.timing.start) << "timing.start and timing.done must be set";
        const std::string* id = result.response.header("X-Request-Id");
        if (id == nullptr) {
            ADD_FAILURE() << "no X-Request-Id header";
            continue;
        }
        EXPECT_TRUE(request_ids.insert(*id).second) << "X-Request-Id " << *id << " came back twice";
    }

    const lab::LabStats stats = server.stats();
    EXPECT_EQ(stats.requests, count) << "the lab server saw a request lost or made twice";
    EXPECT_EQ(stats.accepted, count) << "one connection per request";
    for (const std::string& target : targets) {
        EXPECT_EQ(count_of(stats.requests_by_path, target), 1u) << target << " reached the server";
    }
    return results;
}

ChildOutput run_cli(const StageUnderTest& stage, const std::vector<std::string>& args) {
    return run_program(stage.binary, args, 20s);
}

std::string joined(const std::vector<std::string>& args) {
    std::string text;
    for (const std::string& arg : args) text += (text.empty() ? "" : " ") + arg;
    return text;
}

Json json_report(const ChildOutput& output) {
    try {
        Json report = parse_json(output.out);
        EXPECT_EQ(report.type, Json::Type::object) << "stdout: " << output.out;
        return report;
    } catch (const JsonError& error) {
        ADD_FAILURE() << "stdout is not one JSON object (" << error.what() << "): " << output.out;
        return Json();
    }
}

double number_in(const Json& object, const std::string& key) {
    const Json* value = object.find(key);
    if (value == nullptr || value->type != Json::Type::number) {
        ADD_FAILURE() << "the report has no number \"" << key << "\"";
        return -1;
    }
    return value->number;
}

std::string contents_of(const std::string& path) {
    std::ifstream file(path, std::ios::binary);
    std::stringstream text;
    text << file.rdbuf();
    return text.str();
}

bool has_prlimit() { return ::access("/usr/bin/prlimit", X_OK) == 0; }

std::size_t occurrences(const std::string& text, const std::string& part) {
    std::size_t count = 0;
    for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size())) {
        ++count;
    }
    return count;
}

}  // namespace sixways::conformance
