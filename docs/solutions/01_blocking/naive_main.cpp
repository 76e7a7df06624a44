// solution_01_naive URL: chapter 01's naive fetch (exercise 2) as a program, to see what it gets.
//
//   build/bin/solution_01_naive "${URL}bytes/100000"
//
// It fetches URL once with naive_fetch, which takes what one recv() returned as the whole response,
// then says how many bytes that was and what a ResponseParser makes of them.
#include <cstdio>
#include <exception>
#include <string>

#include "common/address.hpp"
#include "common/http.hpp"
#include "common/url.hpp"
#include "naive_fetch.hpp"

int main(int argc, char** argv) {
    using namespace sixways;
    if (argc != 2) {
        std::fprintf(stderr, "usage: solution_01_naive URL\n");
        return 2;
    }
    try {
        Request request;
        request.url = parse_url(argv[1]);
        request.addresses = resolve(request.url);
        const std::string response = exercise01::naive_fetch(request);
        std::printf("naive_fetch: %zu bytes, taken as the whole response\n", response.size());

        // What the parser makes of those bytes: a response is complete only where its framing says.
        ResponseParser parser;
        const ResponseParser::Status status = parser.feed(response);
        if (status == ResponseParser::Status::error) {
            std::printf("not HTTP: %s\n", parser.error().c_str());
            return 1;
        }
        const std::string* length = parser.response().header("Content-Length");
        if (length != nullptr) std::printf("its headers: Content-Length: %s\n", length->c_str());
        std::printf("body bytes in it: %zu\n", parser.response().body_bytes);
        if (status == ResponseParser::Status::need_more) {
            std::printf("the parser: not complete, the rest of the response was left unread\n");
            return 1;
        }
        std::printf("the parser: complete\n");
        return 0;
    } catch (const std::exception& error) {
        std::fprintf(stderr, "solution_01_naive: %s\n", error.what());
        return 1;
    }
}
