// /site/...: a small synthetic web site for the crawler of stage 06, with the traps a real crawler
// meets (cycles, redirect chains and cycles, fragments, other hosts, non-HTML pages, 404s, slow
// pages). The whole site is one table in site.cpp; lab/README.md says what a correct crawler finds.
#pragma once

#include <span>
#include <string_view>

namespace sixways::lab {

struct SitePage {
    std::string_view path;          // the exact target, e.g. "/site/blog/?page=2"
    int status;                     // 200, 301 or 302
    std::string_view content_type;  // of a 200 page
    int delay_ms;                   // before the answer
    // A 200 page: its content (for text/html, the inside of <body>). A redirect: its Location.
    // "{host}" stands for the host and port the client asked for (its Host header).
    std::string_view content;
};

// Every page of the site, in the order a reader meets them.
std::span<const SitePage> site_pages();

// The page for a target, or nullptr (the server answers 404).
const SitePage* find_site_page(std::string_view target);

}  // namespace sixways::lab
