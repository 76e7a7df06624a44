// Chapter 07, exercise 1, as a program:
//
//   build/bin/solution_07_count_answers [ROOT_URL]     (default http://127.0.0.1:8080/site/)
//   2xx 22
//   3xx 8
//   4xx 2
//   5xx 0
//   failed 0
//
// The root's host is resolved here, before the loop starts, as the crawl program does.
#include <cstdio>
#include <exception>

#include "docs/solutions/07_crawler/count_answers.hpp"

int main(int argc, char** argv) {
    using namespace sixways;
    try {
        crawler::CrawlerOptions options;
        options.roots = {parse_url(argc > 1 ? argv[1] : "http://127.0.0.1:8080/site/")};
        options.addresses[crawler::host_key(options.roots[0])] = resolve(options.roots[0]);
        for (const auto& [answer, count] : crawler::count_answers(crawler::crawl_to_the_end(options))) {
            std::printf("%s %zu\n", answer.c_str(), count);
        }
        return 0;
    } catch (const std::exception& error) {
        std::fprintf(stderr, "solution_07_count_answers: %s\n", error.what());
        return 1;
    }
}
