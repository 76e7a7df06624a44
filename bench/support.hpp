// What the benchmark binaries share: the stages by name, the requests they fetch, and the check that
// every answer is the right one (a fast wrong answer must not count).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "01_blocking/fetch.hpp"
#include "02_threads/fetch.hpp"
#include "03_nonblocking/fetch.hpp"
#include "04_callbacks/fetch.hpp"
#include "05_generators/fetch.hpp"
#include "06_coroutines/fetch.hpp"
#include "common/address.hpp"
#include "common/fetch.hpp"
#include "common/url.hpp"

namespace sixways::bench {

using FetchAllFunction = std::vector<Result> (*)(const std::vector<Request>&, const Options&);

struct Stage {
    const char* name;
    FetchAllFunction fetch_all;
};

inline const std::vector<Stage>& all_stages() {
    static const std::vector<Stage> stages = {
        {"01_blocking", &blocking::fetch_all},     {"02_threads", &threads::fetch_all},
        {"03_nonblocking", &nonblocking::fetch_all}, {"04_callbacks", &callbacks::fetch_all},
        {"05_generators", &generators::fetch_all}, {"06_coroutines", &coroutines::fetch_all},
    };
    return stages;
}

// `count` requests to base_url + "/bench/K", K = 0, 1, ...: distinct paths, so that a response
// credited to the wrong request is caught. base_url is "http://127.0.0.1:PORT" (numeric: resolving
// costs nothing and happens here, before anything is timed).
inline std::vector<Request> numbered_requests(const std::string& base_url, std::size_t count) {
    std::vector<Request> requests(count);
    for (std::size_t k = 0; k < count; ++k) {
        requests[k].url = parse_url(base_url + "/bench/" + std::to_string(k));
        requests[k].addresses = resolve(requests[k].url);
    }
    return requests;
}

// True when the body starts with the lab server's echo of this target: "path=/bench/7 id=...".
inline bool echoes(const std::string& body, const std::string& target) {
    const std::string_view text = body;
    return text.substr(0, 5) == "path=" && text.substr(5, target.size()) == target &&
           text.substr(5 + target.size(), 1) == " ";
}

// Empty when there is one result per request and each is a 200 whose body echoes that request's
// path; otherwise what is wrong with the first one that is not. Allocates nothing when all is well:
// it runs inside the timed loop.
inline std::string first_wrong_result(const std::vector<Request>& requests,
                                      const std::vector<Result>& results) {
    if (results.size() != requests.size()) {
        return std::to_string(results.size()) + " results for " + std::to_string(requests.size()) +
               " requests";
    }
    for (std::size_t k = 0; k < results.size(); ++k) {
        const Result& result = results[k];
        const auto wrong = [k](const std::string& what) { return "request " + std::to_string(k) + ": " + what; };
        if (!result.ok()) return wrong(result.error_message);
        if (result.response.status != 200) return wrong("status " + std::to_string(result.response.status));
        if (!echoes(result.response.body, requests[k].url.target)) return wrong("the body does not echo its path");
    }
    return {};
}

}  // namespace sixways::bench
