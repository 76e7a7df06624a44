// The synthetic web site, as one table. Read it like a map: each row is one URL.
//
// A crawler that starts at /site/, follows links in text/html pages only, follows redirects (as new
// URLs to fetch), drops #fragments, ignores mailto: and javascript: links, and stays on the host it
// started on fetches exactly 32 URLs; lab/README.md lists them and lab/tests/site_test.cpp crawls the
// site to check that list. Pages marked "trap" hold link-shaped text a crawler must NOT follow.
#include "lab/site.hpp"

#include <array>

namespace sixways::lab {
namespace {

constexpr std::string_view html = "text/html; charset=utf-8";
constexpr std::string_view text = "text/plain; charset=utf-8";
constexpr std::string_view json = "application/json";

constexpr std::array pages = {
    // clang-format off
    //       path                     status type  ms   content (a 200 page) or Location (a redirect)
    SitePage{"/site",                 301, "",    0,   "/site/"},
    SitePage{"/site/",                200, html,  0,
        R"page(<h1>The lab site</h1>
<a href="/site/about">About</a> <a href="/site/about#team">The team</a>
<a href="blog/">Blog</a> <a href="docs/">Docs</a> <a href="/site/files/">Files</a>
<a href="/site/old-home">Old home</a> <a href="/site/alias-1">Alias 1</a> <a href="/site/alias-2">Alias 2</a>
<a href="/site/loop-a">Loop</a> <a href='/site/slow/1'>Slow</a>
<a href="http://elsewhere.example/">Another host</a>
<a href="mailto:lab@example.com">Mail</a> <a href="javascript:void(0)">Script</a>
)page"},
    SitePage{"/site/about",           200, html,  0,
        R"page(<h1 id="top">About</h1> <a href="/site/">Home</a> <a href="about">This page</a>
<a href="#top">Top</a> <a href="contact">Contact</a>
)page"},
    SitePage{"/site/contact",         200, html,  0,
        R"page(<a href="mailto:lab@example.com">Write</a> <a href="./about">About</a>
<a href="/site/missing">A page that does not exist</a>
)page"},
    SitePage{"/site/blog/",           200, html,  0,
        R"page(<a href="post-1">Post 1</a> <a href="post-2">Post 2</a> <a href="../about">About</a>
<a href="?page=2">Older posts</a>
)page"},
    SitePage{"/site/blog/?page=2",    200, html,  0,
        R"page(<a href="post-3">Post 3</a> <a href="/site/blog/">Newer posts</a>
)page"},
    SitePage{"/site/blog/post-1",     200, html,  0,
        R"page(<a href="post-2">Next</a> <a href="/site/blog/">Blog</a> <a href="/site/slow/2">Slow</a>
)page"},
    SitePage{"/site/blog/post-2",     200, html,  0,
        R"page(<a href="post-1">Previous</a> <a href="post-9">A post that was deleted</a>
)page"},
    SitePage{"/site/blog/post-3",     200, html,  0,
        R"page(<a href="http://{host}/site/blog/post-1">Post 1, by its absolute URL</a>
<a href="/site/offsite">Moved to another host</a>
)page"},
    SitePage{"/site/docs/",           200, html,  0,
        R"page(<a href="intro">Intro</a> <a href="./chapter-1">Chapter 1</a>
<a href="chapter-2#exercises">Chapter 2</a> <a href="../docs/">Contents</a>
<a href="http://{host}/site/docs/appendix">Appendix</a>
)page"},
    SitePage{"/site/docs/intro",      200, html,  0,
        R"page(<a href="chapter-1">Start</a> <a href="../">Home</a>
)page"},
    SitePage{"/site/docs/chapter-1",  200, html,  0,
        R"page(<A HREF="chapter-2">Next</A> <a href="intro">Back</a>
)page"},
    SitePage{"/site/docs/chapter-2",  200, html,  0,
        R"page(<a href="chapter-1">Back</a> <a href="/site/moved-chapter">Next</a>
)page"},
    SitePage{"/site/docs/chapter-3",  200, html,  0,
        R"page(<a href="../files/data.json">The data</a>
)page"},
    SitePage{"/site/docs/appendix",   200, html,  0,
        R"page(<a href="/site/files/notes.txt">Notes</a>
)page"},
    SitePage{"/site/files/",          200, html,  0,
        R"page(<a href="notes.txt">notes.txt</a> <a href="data.json">data.json</a>
)page"},
    // Trap: plain text that looks like links.
    SitePage{"/site/files/notes.txt", 200, text,  0,
        R"page(Notes for /site/files/notes.txt. Not HTML, so nothing here is a link:
see http://{host}/site/secret-in-text or <a href="/site/secret-in-text-2">this</a>.
)page"},
    // Trap: JSON that holds URLs.
    SitePage{"/site/files/data.json", 200, json,  0,
        R"page({"path": "/site/files/data.json", "next": "/site/secret-in-json",
 "html": "<a href=\"/site/secret-in-json-2\">not a link</a>"}
)page"},
    // A redirect chain: old-home -> older-home -> home.
    SitePage{"/site/old-home",        301, "",    0,   "/site/older-home"},
    SitePage{"/site/older-home",      302, "",    0,   "/site/home"},
    SitePage{"/site/home",            200, html,  0,
        R"page(<a href="/site/">The lab site</a>
)page"},
    // Two different redirects to one page.
    SitePage{"/site/alias-1",         301, "",    0,   "/site/shared"},
    SitePage{"/site/alias-2",         302, "",    0,   "/site/shared"},
    SitePage{"/site/shared",          200, html,  0,
        R"page(<a href="alias-1">This page again, through a redirect</a>
)page"},
    // A redirect cycle.
    SitePage{"/site/loop-a",          302, "",    0,   "/site/loop-b"},
    SitePage{"/site/loop-b",          302, "",    0,   "/site/loop-a"},
    // A redirect to an absolute URL on this host, and one to another host.
    SitePage{"/site/moved-chapter",   301, "",    0,   "http://{host}/site/docs/chapter-3"},
    SitePage{"/site/offsite",         302, "",    0,   "http://elsewhere.example/site/"},
    // Slow pages, in a cycle.
    SitePage{"/site/slow/1",          200, html,  300,
        R"page(<a href="2">Slow 2</a>
)page"},
    SitePage{"/site/slow/2",          200, html,  300,
        R"page(<a href="3">Slow 3</a>
)page"},
    SitePage{"/site/slow/3",          200, html,  300,
        R"page(<a href="1">Slow 1</a> <a href="/site/slow/1#again">Slow 1 again</a>
)page"},
    // clang-format on
};

}  // namespace

std::span<const SitePage> site_pages() { return pages; }

const SitePage* find_site_page(std::string_view target) {
    for (const SitePage& page : pages) {
        if (page.path == target) return &page;
    }
    return nullptr;
}

}  // namespace sixways::lab
