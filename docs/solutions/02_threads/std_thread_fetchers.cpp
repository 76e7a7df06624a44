#include "docs/solutions/02_threads/std_thread_fetchers.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <new>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include "01_blocking/fetch.hpp"

namespace sixways::solutions {

namespace {

// Stage 01's fetch_all on a list of one request is stage 01's fetch_one, which stage 02 copies.
// `quiet` has no on_result: stage 01 would call it with index 0, the index in the list of one.
// Nothing may leave a thread's function (std::terminate), so running out of memory becomes the
// request's error, as in stage 02's fetch_on_thread.
Result fetch_one_blocking(const Request& request, const Options& quiet) noexcept {
    Result result;
    try {
        result = std::move(blocking::fetch_all({request}, quiet).front());
    } catch (const std::bad_alloc&) {
        result.fail(ErrorKind::limit, "out of memory");
    }
    return result;
}

// The result of a request whose thread was never started: std::thread's constructor threw
// (std::system_error with EAGAIN when the system refuses a thread, or std::bad_alloc).
Result refused(const std::exception& error) noexcept {
    Result result;
    try {
        result.fail(ErrorKind::limit, std::string("std::thread: ") + error.what());
    } catch (const std::bad_alloc&) {
        result.fail(ErrorKind::limit, "out of memory");
    }
    return result;
}

Options without_callback(const Options& options) {
    Options quiet = options;
    quiet.on_result = nullptr;
    return quiet;
}

}  // namespace

std::vector<Result> fetch_all_with_std_threads(const std::vector<Request>& requests,
                                               const Options& options) {
    std::vector<Result> results(requests.size());  // one slot per request, as in stage 02
    const Options quiet = without_callback(options);  // read by every thread, written by none
    auto finish = [&](std::size_t index, Result result) {
        results[index] = std::move(result);
        if (options.on_result) options.on_result(index, results[index]);
    };
    std::vector<std::thread> threads;
    threads.reserve(requests.size());  // emplace_back below never reallocates while threads run
    for (std::size_t index = 0; index < requests.size(); ++index) {
        try {
            threads.emplace_back([&, index] {
                finish(index, fetch_one_blocking(requests[index], quiet));
            });
        } catch (const std::exception& error) {
            finish(index, refused(error));
        }
    }
    // A std::thread that is still joinable when destroyed calls std::terminate: join every one.
    // (std::jthread joins in its destructor; the explicit loop says when it happens.)
    for (std::thread& thread : threads) thread.join();
    return results;
}

std::vector<Finished> fetch_in_completion_order(const std::vector<Request>& requests,
                                                const Options& options) {
    const Options quiet = without_callback(options);
    std::mutex mutex;  // guards `finished`, and serialises on_result
    std::vector<Finished> finished;
    // Room for every result up front, so that push_back never allocates on a worker thread (where
    // std::bad_alloc would end the process). The mutex is still needed: two push_backs at once
    // would both write the vector's end, a data race whether or not it reallocates.
    finished.reserve(requests.size());
    auto append = [&](std::size_t index, Result result) {
        const std::lock_guard<std::mutex> lock(mutex);
        finished.push_back(Finished{index, std::move(result)});
        if (options.on_result) options.on_result(index, finished.back().result);
    };

    std::atomic<std::size_t> next{0};  // as stage 02's pool: the next request a worker takes
    auto worker = [&] {
        for (std::size_t i = next.fetch_add(1); i < requests.size(); i = next.fetch_add(1)) {
            append(i, fetch_one_blocking(requests[i], quiet));
        }
    };
    const std::size_t wanted = options.concurrency == 0 ? requests.size() : options.concurrency;
    const std::size_t workers = std::min(wanted, requests.size());
    std::vector<std::thread> threads;
    threads.reserve(workers);
    for (std::size_t k = 0; k < workers; ++k) {
        try {
            threads.emplace_back(worker);
        } catch (const std::exception& error) {
            // A refused worker only makes the pool smaller; with none at all, every request fails.
            if (threads.empty()) {
                for (std::size_t i = 0; i < requests.size(); ++i) append(i, refused(error));
            }
            break;
        }
    }
    for (std::thread& thread : threads) thread.join();
    return finished;
}

}  // namespace sixways::solutions
