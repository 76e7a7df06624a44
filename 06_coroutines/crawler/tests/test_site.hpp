// A small web site for the crawler's tests: a loopback HTTP server that answers from a table of
// path -> page, and counts what it was asked. The lab server's /site/ is one fixed site; each test
// here builds the few pages its case needs, as 500 Lines' test.py does with aiohttp.
//
//   TestSite site;
//   site.add_page("/", {"/foo", "http://example.com/"});     // an HTML page with these links
//   site.add_redirect("/old", "/new");                        // 302, Location: /new
//   site.add("/slow", Page{.body = "hi", .delay = 300ms});
//   ... crawl site.url("/") ...
//   site.requests_for("/foo");     // how many times /foo was asked for
//   site.most_in_flight();         // the most requests it was answering at once
//
// One thread accepts; each connection gets a thread of its own, so requests really overlap and
// most_in_flight() counts them. Every wait is bounded, and the destructor interrupts the delays
// and joins every thread. A path not in the table gets a 404.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/address.hpp"

namespace sixways::crawler::testing {

struct Page {
    int status = 200;
    std::string content_type = "text/html; charset=utf-8";  // "": no Content-Type header
    std::string body{};
    std::string location{};                    // the Location header, if not empty
    std::chrono::milliseconds delay{0};        // before the answer
    int drop_first = 0;                        // close this many connections without an answer
};

class TestSite {
public:
    TestSite();   // listens on 127.0.0.1, on a free port
    ~TestSite();  // stops, interrupting any delay, and joins every thread
    TestSite(const TestSite&) = delete;
    TestSite& operator=(const TestSite&) = delete;

    std::uint16_t port() const { return port_; }
    // "http://127.0.0.1:PORT/path", or with another host name: url("/x", "a.test").
    std::string url(const std::string& path, const std::string& host = "127.0.0.1") const;
    // Where the site listens, for a crawler's table of addresses (any host name may point here).
    Address address() const;

    void add(const std::string& path, Page page);
    // An HTML page of <a href="..."> links.
    void add_page(const std::string& path, const std::vector<std::string>& links);
    void add_redirect(const std::string& path, const std::string& location, int status = 302);

    // Requests for `path`, whatever the host name.
    std::size_t requests_for(const std::string& path) const;
    // Every request as "HOST-HEADER PATH" ("a.test:4242 /x"), in the order they arrived.
    std::vector<std::string> requests() const;
    std::size_t total_requests() const;
    // The most requests that were being answered at once: read, and waiting out their delay.
    std::size_t most_in_flight() const;

private:
    void accept_loop();
    void serve(int fd);

    int listener_ = -1;
    int wake_pipe_[2] = {-1, -1};  // written by the destructor to wake the accept loop
    std::uint16_t port_ = 0;

    mutable std::mutex mutex_;
    std::condition_variable stopped_;  // interrupts the delays
    bool stopping_ = false;
    std::map<std::string, Page> pages_;
    std::map<std::string, int> dropped_;  // path -> connections dropped so far
    std::vector<std::string> requests_;
    std::size_t in_flight_ = 0;
    std::size_t most_in_flight_ = 0;
    std::vector<std::thread> connections_;
    std::thread acceptor_;
};

}  // namespace sixways::crawler::testing
