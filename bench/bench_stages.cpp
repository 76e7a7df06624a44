// Every stage end to end, and the yardstick, against one lab server in this process that answers
// at once (delay 0). With no delay to wait for, what is left is each stage's cost per request:
// connect, send, parse, the bookkeeping of its way of waiting, and the server's share.
//
// Reported as items_per_second: requests per second of wall time (UseRealTime: stage 02's work is
// on its own threads, and the lab server's on another, so the main thread's CPU time would say
// little), and as CPU time per request of the client and of the server (CpuPerRequest below).
//
// Every iteration checks every result (a 200 whose body echoes its own path) and stops the
// benchmark with an error otherwise: a fast wrong answer must not count. The check is inside the
// timed loop; it is a string comparison per request, microseconds against the milliseconds of
// 1000 connections.
//
//   bench_stages --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <pthread.h>
#include <time.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "bench/support.hpp"
#include "bench/yardstick.h"
#include "lab/labserver.hpp"

namespace {

using sixways::Options;
using sixways::Request;
using sixways::Result;
using sixways::bench::FetchAllFunction;

// One lab server for the whole binary: IPv4 loopback, a free port, no delay. It runs on a thread
// of ours rather than through LabServer::start(), so that we can read that thread's CPU clock.
class RunningServer {
public:
    RunningServer() : server_(options()), thread_([this] { server_.run(); }) {
        pthread_getcpuclockid(thread_.native_handle(), &cpu_clock_);
    }
    ~RunningServer() {
        server_.stop();
        thread_.join();
    }
    RunningServer(const RunningServer&) = delete;
    RunningServer& operator=(const RunningServer&) = delete;

    std::string base_url() const { return "http://127.0.0.1:" + std::to_string(server_.port()); }
    double cpu_seconds() const { return seconds_on(cpu_clock_); }

    static double seconds_on(clockid_t clock) {
        timespec now{};
        clock_gettime(clock, &now);
        return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) / 1e9;
    }

private:
    static sixways::lab::LabServerOptions options() {
        sixways::lab::LabServerOptions options;
        options.hosts = {"127.0.0.1"};
        options.port = 0;
        options.delay = sixways::Duration::zero();
        return options;
    }
    sixways::lab::LabServer server_;
    std::thread thread_;
    clockid_t cpu_clock_{};
};

const RunningServer& lab_server() {
    static const RunningServer server;
    return server;
}

// CPU time per request, split between the client (the whole process but the server's thread: the
// calling thread, and stage 02's threads) and the server's thread, user and system time both.
// Reported next to the requests per second because with no delay the lab server's single thread
// can be what limits the rate, on two cores shared with the client: then the rows come close to
// the server's rate, and the client's CPU time per request is what tells the clients apart. On
// loopback each side's system calls also do part of the other side's kernel work (a send delivers
// the segment to the receiving socket on the sender's time), so the split is approximate; the
// server does the same work for every client, so the differences between rows are the clients'.
class CpuPerRequest {
public:
    CpuPerRequest()
        : process_(RunningServer::seconds_on(CLOCK_PROCESS_CPUTIME_ID)), server_(lab_server().cpu_seconds()) {}

    void report(benchmark::State& state, std::size_t requests_per_iteration) const {
        const double server = lab_server().cpu_seconds() - server_;
        const double process = RunningServer::seconds_on(CLOCK_PROCESS_CPUTIME_ID) - process_;
        const double requests = static_cast<double>(state.iterations()) * static_cast<double>(requests_per_iteration);
        if (requests == 0) return;
        state.counters["client_cpu_us_per_request"] = (process - server) / requests * 1e6;
        state.counters["server_cpu_us_per_request"] = server / requests * 1e6;
    }

private:
    double process_;
    double server_;
};

// One iteration: `count` requests through the stage's fetch_all, at most `concurrency` at once (0:
// all at once).
void fetch_all_benchmark(benchmark::State& state, FetchAllFunction fetch_all, std::size_t count,
                         std::size_t concurrency) {
    const std::vector<Request> requests = sixways::bench::numbered_requests(lab_server().base_url(), count);
    Options options;
    options.concurrency = concurrency;
    const CpuPerRequest cpu;
    for (auto _ : state) {
        const std::vector<Result> results = fetch_all(requests, options);
        const std::string wrong = sixways::bench::first_wrong_result(requests, results);
        if (!wrong.empty()) {
            state.SkipWithError(wrong.c_str());
            break;
        }
    }
    state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(count));
    cpu.report(state, count);
}

// The same through the yardstick (yardstick.c). It has no parser, so all it can check is that
// every connection ended with the server closing it after some bytes: ok == count.
void yardstick_benchmark(benchmark::State& state, std::size_t count, std::size_t concurrency) {
    const std::string url = lab_server().base_url() + "/bench/yardstick";
    const CpuPerRequest cpu;
    for (auto _ : state) {
        yardstick_result result{};
        const int status = yardstick_run(url.c_str(), static_cast<long long>(count),
                                         static_cast<long long>(concurrency), &result);
        if (status != 0 || result.ok != static_cast<long long>(count) ||
            result.bytes_received == 0) {
            const std::string wrong = "yardstick: status " + std::to_string(status) + ", " +
                                      std::to_string(result.ok) + " ok, " +
                                      std::to_string(result.failed) + " failed";
            state.SkipWithError(wrong.c_str());
            break;
        }
    }
    state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(count));
    cpu.report(state, count);
}

// What is registered: N = 1000 requests, 100 at a time and all at once, for every stage but 01,
// which takes one at a time (so 100 requests keep it as short as the others). The names read
// "04_callbacks/n:1000/c:100"; c:all is all at once.
constexpr std::size_t requests_per_iteration = 1000;
constexpr std::size_t limited_concurrency = 100;
constexpr std::size_t blocking_requests_per_iteration = 100;
constexpr double seconds_per_benchmark = 0.5;

std::string name_of(const std::string& stage, std::size_t count, std::size_t concurrency) {
    return stage + "/n:" + std::to_string(count) +
           "/c:" + (concurrency == 0 ? std::string("all") : std::to_string(concurrency));
}

void configure(benchmark::internal::Benchmark* benchmark) {
    benchmark->UseRealTime()->MinTime(seconds_per_benchmark)->Unit(benchmark::kMillisecond);
}

[[maybe_unused]] const bool registered = [] {
    for (const sixways::bench::Stage& stage : sixways::bench::all_stages()) {
        if (stage.fetch_all == &sixways::blocking::fetch_all) {
            configure(benchmark::RegisterBenchmark(
                name_of(stage.name, blocking_requests_per_iteration, 1).c_str(), fetch_all_benchmark,
                stage.fetch_all, blocking_requests_per_iteration, std::size_t{1}));
            continue;
        }
        for (std::size_t concurrency : {limited_concurrency, std::size_t{0}}) {
            configure(benchmark::RegisterBenchmark(
                name_of(stage.name, requests_per_iteration, concurrency).c_str(), fetch_all_benchmark,
                stage.fetch_all, requests_per_iteration, concurrency));
        }
    }
    for (std::size_t concurrency : {limited_concurrency, std::size_t{0}}) {
        configure(benchmark::RegisterBenchmark(
            name_of("yardstick", requests_per_iteration, concurrency).c_str(), yardstick_benchmark,
            requests_per_iteration, concurrency));
    }
    return true;
}();

}  // namespace
