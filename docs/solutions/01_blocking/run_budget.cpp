#include "run_budget.hpp"

#include <algorithm>
#include <chrono>
#include <utility>

#include "01_blocking/fetch.hpp"

namespace sixways::exercise01 {

std::vector<Result> fetch_all_within(const std::vector<Request>& requests, const Options& options,
                                     Duration budget) {
    // A point in time, computed once, as fetch_one computes each request's deadline.
    const Clock::time_point run_deadline = deadline_after(Clock::now(), budget);
    Options one = options;
    one.on_result = nullptr;  // called here, once per request, with the request's own index

    std::vector<Result> results;
    results.reserve(requests.size());
    for (std::size_t index = 0; index < requests.size(); ++index) {
        const Duration left = run_deadline - Clock::now();
        if (left <= Duration::zero()) {
            // Not Result::fail(), which would stamp `done` with now: this request never started,
            // so all its times stay at the clock's epoch.
            Result skipped;
            skipped.error = ErrorKind::timeout;
            skipped.error_message = "timeout: the run's " + format_duration(budget) +
                                    " were spent before this request started";
            results.push_back(std::move(skipped));
        } else {
            // The request's own deadline, or the run's if that comes first. The time left is
            // rounded up to whole milliseconds, so that a timeout message reads "after 300 ms",
            // not "after 299.987 ms"; ending under a millisecond after the run's deadline is close
            // enough for a budget.
            const Duration left_ms = std::chrono::ceil<std::chrono::milliseconds>(left);
            one.timeout = std::min(options.timeout, left_ms);
            results.push_back(std::move(blocking::fetch_all({requests[index]}, one).front()));
        }
        if (options.on_result) options.on_result(index, results.back());
    }
    return results;
}

}  // namespace sixways::exercise01
