// Memory per request in flight: what one more waiting request costs each stage.
//
// Every benchmark starts N = 500 requests at once against a lab server that waits 500 ms before
// each answer, and takes a sample 250 ms later, from a thread of its own: by then every request is
// connected, has sent its GET and is waiting for the answer, the state in which a request spends
// nearly all its life with a slow server, and none has finished. That is checked afterwards from
// the results' timings; if it does not hold (a machine too busy to start them all within 250 ms),
// the benchmark stops with an error rather than divide by the wrong number. (A sample taken at the
// first result instead would catch other requests half-way through reading their answers, which
// arrive together, and vary from run to run.)
//
// What is counted
//   heap_live: bytes allocated with operator new (this file replaces the global one; every
//     allocation of the stages, the standard library and their coroutine frames goes through it)
//     and not yet freed at the sample, minus those live just before fetch_all was called, divided
//     by N. It includes the stage's result slot per request (sizeof(Result), reported as
//     result_slot), the coroutine frames of 05 and 06, the objects of 04, the parser of each
//     request, and for 02 what it allocates per thread. Sizes are malloc_usable_size(), what
//     malloc really set aside (its own 8-byte header per block is not included).
//   heap_allocated and allocations: everything allocated during the whole fetch_all, live or not,
//     per request.
//   For stage 02, its threads' stacks, which are not allocated with operator new: for each thread,
//     from inside its on_result call, pthread_getattr_np gives the stack the stage asked for and its
//     guard page (stack_reserved, address space) and mincore() says how many of those pages are in
//     memory (stack_resident: the pages the thread touched by the end of its request, its peak,
//     including the thread's descriptor and thread-local storage, which glibc keeps at the top of
//     the stack). The sum heap_live + stack_resident is what a thread per request costs in memory.
// What is not counted
//   The kernel's side: each socket's buffers and structures, and for 02 each thread's kernel stack
//   and task structure; memory taken with malloc() directly instead of operator new (the C
//   library's own, e.g. by pthread_getattr_np, and the per-thread arenas malloc keeps for 02's
//   threads); and the requests vector, which the caller owns.
//   The lab server runs in a child process (forked before the first benchmark), so none of its
//   allocations are counted.
//
// The time these benchmarks report is the server's delay, not a speed: read the counters.
//
//   bench_memory --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench/support.hpp"
#include "lab/labserver.hpp"

// ---- The counting operator new ----
//
// Replaces the global operator new and delete for this program. The counters are atomics because
// stage 02 allocates from many threads at once.
//
// A build with a sanitizer leaves them out (CMakeLists.txt defines SIXWAYS_BENCH_NO_COUNTING): the
// sanitizers bring their own operator new, to check every allocation, and clang links theirs into
// the program, where a second one does not link. This program then reports an error instead of
// figures.
namespace {

std::atomic<std::int64_t> live_bytes{0};
std::atomic<std::int64_t> allocated_bytes{0};
std::atomic<std::int64_t> allocation_count{0};

}  // namespace

#ifndef SIXWAYS_BENCH_NO_COUNTING
namespace {

void* counted(void* block) {
    if (block == nullptr) return nullptr;
    const auto size = static_cast<std::int64_t>(malloc_usable_size(block));
    live_bytes.fetch_add(size, std::memory_order_relaxed);
    allocated_bytes.fetch_add(size, std::memory_order_relaxed);
    allocation_count.fetch_add(1, std::memory_order_relaxed);
    return block;
}

void* allocate(std::size_t size) noexcept { return counted(std::malloc(size == 0 ? 1 : size)); }

void* allocate_aligned(std::size_t size, std::align_val_t alignment) noexcept {
    const auto align = static_cast<std::size_t>(alignment);
    // aligned_alloc wants a size that is a multiple of the alignment.
    const std::size_t rounded = (size + align - 1) / align * align;
    return counted(std::aligned_alloc(align, rounded == 0 ? align : rounded));
}

void release(void* block) noexcept {
    if (block == nullptr) return;
    live_bytes.fetch_sub(static_cast<std::int64_t>(malloc_usable_size(block)), std::memory_order_relaxed);
    std::free(block);
}

void* allocate_or_throw(std::size_t size) {
    if (void* block = allocate(size)) return block;
    throw std::bad_alloc();
}

void* allocate_aligned_or_throw(std::size_t size, std::align_val_t alignment) {
    if (void* block = allocate_aligned(size, alignment)) return block;
    throw std::bad_alloc();
}

}  // namespace

void* operator new(std::size_t size) { return allocate_or_throw(size); }
void* operator new[](std::size_t size) { return allocate_or_throw(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept { return allocate(size); }
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept { return allocate(size); }
void* operator new(std::size_t size, std::align_val_t alignment) {
    return allocate_aligned_or_throw(size, alignment);
}
void* operator new[](std::size_t size, std::align_val_t alignment) {
    return allocate_aligned_or_throw(size, alignment);
}
void* operator new(std::size_t size, std::align_val_t alignment, const std::nothrow_t&) noexcept {
    return allocate_aligned(size, alignment);
}
void* operator new[](std::size_t size, std::align_val_t alignment, const std::nothrow_t&) noexcept {
    return allocate_aligned(size, alignment);
}
void operator delete(void* block) noexcept { release(block); }
void operator delete[](void* block) noexcept { release(block); }
void operator delete(void* block, std::size_t) noexcept { release(block); }
void operator delete[](void* block, std::size_t) noexcept { release(block); }
void operator delete(void* block, const std::nothrow_t&) noexcept { release(block); }
void operator delete[](void* block, const std::nothrow_t&) noexcept { release(block); }
void operator delete(void* block, std::align_val_t) noexcept { release(block); }
void operator delete[](void* block, std::align_val_t) noexcept { release(block); }
void operator delete(void* block, std::size_t, std::align_val_t) noexcept { release(block); }
void operator delete[](void* block, std::size_t, std::align_val_t) noexcept { release(block); }
void operator delete(void* block, std::align_val_t, const std::nothrow_t&) noexcept { release(block); }
void operator delete[](void* block, std::align_val_t, const std::nothrow_t&) noexcept { release(block); }
#endif

namespace {

using sixways::Clock;
using sixways::Options;
using sixways::Request;
using sixways::Result;

constexpr std::size_t requests_in_flight = 500;
constexpr auto server_delay = std::chrono::milliseconds(500);
constexpr auto sample_after = server_delay / 2;

// ---- The lab server, in a child process ----

class ServerProcess {
public:
    ServerProcess() {
        int pipe_fds[2];
        if (pipe2(pipe_fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
        pid_ = fork();
        if (pid_ < 0) throw std::runtime_error("fork failed");
        if (pid_ == 0) serve(pipe_fds[1]);  // never returns
        close(pipe_fds[1]);
        std::uint16_t port = 0;
        const ssize_t n = read(pipe_fds[0], &port, sizeof port);
        close(pipe_fds[0]);
        if (n != static_cast<ssize_t>(sizeof port)) {
            stop();
            throw std::runtime_error("the lab server did not start");
        }
        base_url_ = "http://127.0.0.1:" + std::to_string(port);
    }
    ~ServerProcess() { stop(); }
    ServerProcess(const ServerProcess&) = delete;
    ServerProcess& operator=(const ServerProcess&) = delete;

    const std::string& base_url() const { return base_url_; }

private:
    // In the child: serve until killed. The child dies with this process (PR_SET_PDEATHSIG), so a
    // benchmark that crashes leaves no server behind.
    [[noreturn]] static void serve(int port_fd) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        try {
            sixways::lab::LabServerOptions options;
            options.hosts = {"127.0.0.1"};
            options.port = 0;
            options.delay = server_delay;
            sixways::lab::LabServer server(options);
            const std::uint16_t port = server.port();
            if (write(port_fd, &port, sizeof port) != static_cast<ssize_t>(sizeof port)) _exit(1);
            close(port_fd);
            server.run();
        } catch (...) {
        }
        _exit(1);
    }

    void stop() {
        if (pid_ > 0) {
            kill(pid_, SIGKILL);
            waitpid(pid_, nullptr, 0);
            pid_ = -1;
        }
    }

    pid_t pid_ = -1;
    std::string base_url_;
};

const ServerProcess& lab_server() {
    static const ServerProcess server;
    return server;
}

// ---- The sample ----

// The sample, and what on_result records for stage 02. on_result holds only a pointer to this, so
// that copying the Options, if a stage does, does not allocate: the benchmark must not add to what
// it measures.
struct Sample {
    bool measure_thread_stack = false;  // stage 02: look at the calling thread's stack too

    std::int64_t live_bytes_then = 0;  // live heap bytes at the sample
    Clock::time_point when;            // when the sample was taken

    std::atomic<std::int64_t> stack_reserved{0};  // the largest stack + guard seen
    std::atomic<std::int64_t> stack_resident{0};  // sum over the threads measured
    std::atomic<std::int64_t> stacks_measured{0};

    void take() {
        live_bytes_then = live_bytes.load();
        when = Clock::now();
    }

    void on_result() {
        if (measure_thread_stack) measure_stack();
    }

    // The stack of the thread we are called on: its size and guard as the thread was created, and
    // how many of its pages are in memory.
    void measure_stack() {
        pthread_attr_t attributes;
        if (pthread_getattr_np(pthread_self(), &attributes) != 0) return;
        void* address = nullptr;
        std::size_t size = 0, guard = 0;
        pthread_attr_getstack(&attributes, &address, &size);
        pthread_attr_getguardsize(&attributes, &guard);
        pthread_attr_destroy(&attributes);

        const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
        const auto begin = reinterpret_cast<std::uintptr_t>(address) / page * page;
        const auto end = (reinterpret_cast<std::uintptr_t>(address) + size + page - 1) / page * page;
        std::vector<unsigned char> in_memory((end - begin) / page);
        if (mincore(reinterpret_cast<void*>(begin), end - begin, in_memory.data()) != 0) return;
        std::int64_t resident = 0;
        for (unsigned char flags : in_memory) resident += (flags & 1) ? static_cast<std::int64_t>(page) : 0;

        const auto reserved = static_cast<std::int64_t>(size + guard);
        std::int64_t seen = stack_reserved.load();
        while (reserved > seen && !stack_reserved.compare_exchange_weak(seen, reserved)) {
        }
        stack_resident.fetch_add(resident);
        stacks_measured.fetch_add(1);
    }
};

// Requests that had started (their first connect) and were not final when the sample was taken.
std::size_t in_flight_at(const Sample& sample, const std::vector<Result>& results) {
    std::size_t count = 0;
    for (const Result& result : results) {
        if (result.timing.start != Clock::time_point{} && result.timing.start <= sample.when &&
            result.timing.done > sample.when) {
            ++count;
        }
    }
    return count;
}

void memory_benchmark(benchmark::State& state, sixways::bench::FetchAllFunction fetch_all,
                      bool measure_thread_stack) {
#ifdef SIXWAYS_BENCH_NO_COUNTING
    state.SkipWithError("built with a sanitizer, which brings its own operator new: nothing is counted");
    return;
#endif
    const std::size_t n = requests_in_flight;
    const std::vector<Request> requests = sixways::bench::numbered_requests(lab_server().base_url(), n);
    double heap_live = 0, heap_allocated = 0, allocations = 0, stack_reserved = 0, stack_resident = 0;
    for (auto _ : state) {
        Sample sample;
        sample.measure_thread_stack = measure_thread_stack;
        Options options;  // all at once
        options.on_result = [sample = &sample](std::size_t, const Result&) { sample->on_result(); };
        // Started before the counts below are read, so that its own allocation is in the baseline.
        std::thread sampler([&sample] {
            std::this_thread::sleep_for(sample_after);
            sample.take();
        });

        const std::int64_t live_before = live_bytes.load();
        const std::int64_t allocated_before = allocated_bytes.load();
        const std::int64_t count_before = allocation_count.load();
        const std::vector<Result> results = fetch_all(requests, options);
        const std::int64_t allocated_during = allocated_bytes.load() - allocated_before;
        const std::int64_t count_during = allocation_count.load() - count_before;
        sampler.join();

        const std::string wrong = sixways::bench::first_wrong_result(requests, results);
        if (!wrong.empty()) {
            state.SkipWithError(wrong.c_str());
            break;
        }
        const std::size_t in_flight = in_flight_at(sample, results);
        if (in_flight != n) {
            const std::string message = std::to_string(in_flight) + " of " + std::to_string(n) +
                                        " requests were in flight at the sample: the machine is "
                                        "too busy to start them all in time";
            state.SkipWithError(message.c_str());
            break;
        }
        heap_live = static_cast<double>(sample.live_bytes_then - live_before) / static_cast<double>(n);
        heap_allocated = static_cast<double>(allocated_during) / static_cast<double>(n);
        allocations = static_cast<double>(count_during) / static_cast<double>(n);
        if (measure_thread_stack && sample.stacks_measured.load() > 0) {
            stack_reserved = static_cast<double>(sample.stack_reserved.load());
            stack_resident = static_cast<double>(sample.stack_resident.load()) /
                             static_cast<double>(sample.stacks_measured.load());
        }
    }
    // One iteration per run (Iterations(1) below); with --benchmark_repetitions, each repetition is
    // a fresh sample and the aggregates are over those.
    state.counters["heap_live_B_per_request"] = heap_live;
    state.counters["heap_allocated_B_per_request"] = heap_allocated;
    state.counters["allocations_per_request"] = allocations;
    state.counters["result_slot_B"] = static_cast<double>(sizeof(Result));
    if (measure_thread_stack) {
        state.counters["stack_reserved_B_per_thread"] = stack_reserved;
        state.counters["stack_resident_B_per_thread"] = stack_resident;
    }
}

[[maybe_unused]] const bool registered = [] {
    for (const sixways::bench::Stage& stage : sixways::bench::all_stages()) {
        // 01 has one request in flight, ever: nothing to divide.
        if (stage.fetch_all == &sixways::blocking::fetch_all) continue;
        const bool threads = stage.fetch_all == &sixways::threads::fetch_all;
        const std::string name = std::string(stage.name) + "/in_flight:" + std::to_string(requests_in_flight);
        benchmark::RegisterBenchmark(name.c_str(), memory_benchmark, stage.fetch_all, threads)
            ->Iterations(1)
            ->UseRealTime()
            ->Unit(benchmark::kMillisecond);
    }
    return true;
}();

}  // namespace
