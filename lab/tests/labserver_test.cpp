// The lab server in-process, on port 0, talked to by the blocking client of test_client.hpp.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <chrono>
#include <future>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "lab/labserver.hpp"
#include "lab/tests/test_client.hpp"

namespace sixways::lab {
namespace {

using namespace std::chrono_literals;
using test::Client;
using test::fetch;
using test::Reply;

using SteadyClock = std::chrono::steady_clock;

std::unique_ptr<LabServer> start_server(Duration delay = 0ms,
                                        std::vector<std::string> hosts = {"127.0.0.1", "::1"}) {
    LabServerOptions options;
    options.hosts = std::move(hosts);
    options.port = 0;
    options.delay = delay;
    auto server = std::make_unique<LabServer>(options);
    server->start();
    return server;
}

// Polls until `condition` holds or two seconds pass; returns whether it held.
template <typename Condition>
bool eventually(Condition condition) {
    const auto deadline = SteadyClock::now() + 2s;
    while (!condition()) {
        if (SteadyClock::now() > deadline) return false;
        std::this_thread::sleep_for(5ms);
    }
    return true;
}

TEST(LabServer, AnswersTheRootWith200AndAHundredByteBodyThatEchoesThePath) {
    auto server = start_server();
    const Reply reply = fetch(server->port(), "/");
    ASSERT_EQ(reply.status, 200) << reply.error;
    EXPECT_EQ(reply.body, test::expected_body("/", 1, 100));
    EXPECT_EQ(reply.header("content-length"), "100");
    EXPECT_EQ(reply.header("content-type"), "text/plain; charset=utf-8");
    EXPECT_EQ(reply.header("x-request-id"), "1");
    EXPECT_EQ(reply.header("connection"), "close");
}

TEST(LabServer, TreatsAnyOtherPathAsAPlainPathAndEchoesItWithItsQuery) {
    auto server = start_server();
    const Reply reply = fetch(server->port(), "/a/b?x=1");
    ASSERT_EQ(reply.status, 200) << reply.error;
    EXPECT_EQ(reply.body, test::expected_body("/a/b?x=1", 1, 100));
}

TEST(LabServer, NumbersRequestsFromOneInTheOrderTheyArrive) {
    auto server = start_server();
    for (int expected = 1; expected <= 5; ++expected) {
        const std::string target = "/n/" + std::to_string(expected);
        const Reply reply = fetch(server->port(), target);
        ASSERT_EQ(reply.status, 200) << reply.error;
        EXPECT_EQ(reply.header("x-request-id"), std::to_string(expected));
        EXPECT_TRUE(reply.body.starts_with("path=" + target + " id=" + std::to_string(expected) + "\n"));
    }
}

TEST(LabServer, PutsARequestIdAndAContentTypeOnEveryResponse) {
    auto server = start_server();
    for (const char* target : {"/", "/delay/1", "/bytes/3", "/chunked/3", "/redirect/1", "/status/500",
                               "/status/204", "/status/100", "/stats", "/site/", "/site/old-home",
                               "/site/missing", "/fault/nonsense", "/fault/keep-open"}) {
        Client client("127.0.0.1", server->port(), 1000ms);
        client.send(test::request_text(target));
        // keep-open never closes: read up to the end of the head, not to the end.
        const test::ReadResult result = client.read_until("\r\n\r\n");
        const std::size_t head_end = result.bytes.find("\r\n\r\n");
        ASSERT_NE(head_end, std::string::npos) << target;
        const std::string head = result.bytes.substr(0, head_end);
        EXPECT_NE(head.find("\r\nX-Request-Id: "), std::string::npos) << target;
        EXPECT_NE(head.find("\r\nContent-Type: "), std::string::npos) << target;
    }
}

TEST(LabServer, NeverAnswersAPlainPathBeforeTheDelay) {
    auto server = start_server(200ms);
    const auto start = SteadyClock::now();
    const Reply reply = fetch(server->port(), "/slow");
    const auto elapsed = SteadyClock::now() - start;
    ASSERT_EQ(reply.status, 200) << reply.error;
    EXPECT_GE(elapsed, 200ms);
}

TEST(LabServer, WaitsTheMillisecondsOfADelayPathWhateverTheServersDelay) {
    auto server = start_server(0ms);
    const auto start = SteadyClock::now();
    const Reply reply = fetch(server->port(), "/delay/150");
    const auto elapsed = SteadyClock::now() - start;
    ASSERT_EQ(reply.status, 200) << reply.error;
    EXPECT_EQ(reply.body, test::expected_body("/delay/150", 1, 100));
    EXPECT_GE(elapsed, 150ms);
}

TEST(LabServer, AppliesTheDelayToPlainPathsOnly) {
    auto server = start_server(60s);  // any delayed answer would miss the client's 2 s timeout
    for (const char* target : {"/bytes/5", "/chunked/5", "/redirect/1", "/status/404", "/stats",
                               "/site/", "/fault/short-body"}) {
        Client client("127.0.0.1", server->port());
        client.send(test::request_text(target));
        const test::ReadResult result = client.read_to_end();
        EXPECT_TRUE(result.closed) << target;
        EXPECT_TRUE(result.bytes.starts_with("HTTP/1.1 ")) << target;
    }
}

TEST(LabServer, SendsExactlyNBytesForBytesN) {
    auto server = start_server();
    std::uint64_t id = 0;
    for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{10}, std::size_t{1000},
                                std::size_t{10'000'000}}) {
        const std::string target = "/bytes/" + std::to_string(n);
        const Reply reply = fetch(server->port(), target);
        ++id;
        ASSERT_EQ(reply.status, 200) << reply.error;
        EXPECT_EQ(reply.header("content-length"), std::to_string(n));
        ASSERT_EQ(reply.body.size(), n);
        EXPECT_TRUE(reply.body == test::expected_body(target, id, n)) << target;
    }
}

TEST(LabServer, RejectsBadSizesWith400) {
    auto server = start_server();
    for (const char* target : {"/bytes/1073741825", "/bytes/abc", "/bytes/-1", "/bytes/",
                               "/chunked/99999999999999999999", "/delay/600001", "/redirect/x",
                               "/status/99", "/status/600", "/status/2xx"}) {
        const Reply reply = fetch(server->port(), target);
        EXPECT_EQ(reply.status, 400) << target << " " << reply.error;
        EXPECT_TRUE(reply.body.starts_with("path=" + std::string(target) + " id=")) << target;
    }
}

TEST(LabServer, SendsChunkedNInChunksWithExtensionsAndATrailer) {
    auto server = start_server();
    const Reply reply = fetch(server->port(), "/chunked/100000");
    ASSERT_EQ(reply.status, 200) << reply.error;
    EXPECT_TRUE(reply.chunked);
    EXPECT_EQ(reply.header("content-length"), "");
    EXPECT_EQ(reply.body, test::expected_body("/chunked/100000", 1, 100000));
    // Every chunk, the last (empty) one included, carries an extension.
    ASSERT_GE(reply.chunk_extensions.size(), 3u);
    EXPECT_EQ(reply.chunk_extensions.back(), ";last=\"yes, really\"");
    ASSERT_EQ(reply.trailers.size(), 1u);
    EXPECT_EQ(reply.trailers[0].first, "x-body-bytes");
    EXPECT_EQ(reply.trailers[0].second, "100000");
}

TEST(LabServer, CountsRedirectsDownToZero) {
    auto server = start_server();
    for (int k = 3; k > 0; --k) {
        const Reply reply = fetch(server->port(), "/redirect/" + std::to_string(k));
        ASSERT_EQ(reply.status, 302) << reply.error;
        EXPECT_EQ(reply.header("location"), "/redirect/" + std::to_string(k - 1));
    }
    const Reply last = fetch(server->port(), "/redirect/0");
    EXPECT_EQ(last.status, 200) << last.error;
    EXPECT_TRUE(last.body.starts_with("path=/redirect/0 id=4\n"));
}

TEST(LabServer, AnswersStatusCodeWithThatStatus) {
    auto server = start_server();
    for (const int code : {200, 201, 301, 404, 418, 500, 503, 599}) {
        const std::string target = "/status/" + std::to_string(code);
        const Reply reply = fetch(server->port(), target);
        EXPECT_EQ(reply.status, code) << reply.error;
        EXPECT_TRUE(reply.body.starts_with("path=" + target + " id=")) << target;
    }
}

TEST(LabServer, Sends204And304WithoutABodyOrAContentLength) {
    auto server = start_server();
    for (const char* target : {"/status/204", "/status/304"}) {
        Client client("127.0.0.1", server->port());
        client.send(test::request_text(target));
        const test::ReadResult result = client.read_to_end();
        ASSERT_TRUE(result.closed) << target;
        EXPECT_TRUE(result.bytes.ends_with("\r\n\r\n")) << target;  // nothing after the head
        EXPECT_EQ(result.bytes.find("Content-Length"), std::string::npos) << target;
    }
}

TEST(LabServer, SendsAnInterimResponseBeforeTheFinalOneForA1xxStatus) {
    auto server = start_server();
    const Reply reply = fetch(server->port(), "/status/103");
    ASSERT_EQ(reply.status, 200) << reply.error;
    EXPECT_EQ(reply.interim_statuses, std::vector<int>{103});
    EXPECT_TRUE(reply.body.starts_with("path=/status/103 id=1\n"));
}

TEST(LabServer, AnswersHeadWithTheHeadersOfGetAndNoBody) {
    auto server = start_server();
    Client client("127.0.0.1", server->port());
    client.send(test::request_text("/bytes/1000", "HEAD"));
    const test::ReadResult result = client.read_to_end();
    ASSERT_TRUE(result.closed);
    EXPECT_NE(result.bytes.find("\r\nContent-Length: 1000\r\n"), std::string::npos);
    EXPECT_TRUE(result.bytes.ends_with("\r\n\r\n"));
}

TEST(LabServer, AnswersGarbageWith400AndClosesTheConnection) {
    auto server = start_server();
    Client client("127.0.0.1", server->port());
    client.send("garbage\r\n\r\n");
    const test::ReadResult result = client.read_to_end();
    EXPECT_TRUE(result.closed);
    const Reply reply = test::parse_reply(result.bytes);
    EXPECT_EQ(reply.status, 400) << reply.error;
    EXPECT_EQ(reply.header("x-request-id"), "1");
}

TEST(LabServer, AnswersAHeadOver16KiBWith431AndClosesWithoutAReset) {
    auto server = start_server();
    Client client("127.0.0.1", server->port());
    client.send("GET / HTTP/1.1\r\nX-Filler: " + std::string(20 * 1024, 'x'));
    const test::ReadResult result = client.read_to_end();
    EXPECT_TRUE(result.closed) << "error " << result.error;  // a FIN, after the whole answer
    EXPECT_EQ(test::parse_reply(result.bytes).status, 431);
}

// A socket closed with bytes it has not read makes the kernel send a reset, which throws away
// whatever the client has not read yet: a body the server does not use, or requests after the
// first, must not cut the answer short.
TEST(LabServer, SendsTheWholeAnswerWhenTheRequestLeavesBytesUnread) {
    auto server = start_server();
    const std::string head = "GET /bytes/4000000 HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    std::string pipelined;
    while (pipelined.size() < 30'000) pipelined += test::request_text("/next");
    for (const std::string& request :
         {head + "Content-Length: 100000\r\n\r\n" + std::string(100'000, 'b'),
          head + "\r\n" + pipelined}) {
        Client client("127.0.0.1", server->port(), 5000ms);
        client.send(request);
        const test::ReadResult result = client.read_to_end();
        EXPECT_TRUE(result.closed) << "error " << result.error;  // a FIN, after the whole answer
        const Reply reply = test::parse_reply(result.bytes);
        EXPECT_EQ(reply.status, 200) << reply.error;
        EXPECT_EQ(reply.body.size(), 4'000'000u);
    }
}

TEST(LabServer, AnswersAnHttp11RequestWithoutHostWith400AndAnHttp10OneWith200) {
    auto server = start_server();
    for (const auto& [request, status] : {std::pair{"GET /no-host HTTP/1.1\r\n\r\n", 400},
                                          std::pair{"GET /no-host HTTP/1.0\r\n\r\n", 200}}) {
        Client client("127.0.0.1", server->port());
        client.send(request);
        const Reply reply = test::parse_reply(client.read_to_end().bytes);
        EXPECT_EQ(reply.status, status) << request << reply.error;
    }
}

TEST(LabServer, AnswersAnAbsoluteFormTargetAsItsPathOnTheHostItNames) {
    auto server = start_server();
    const std::string prefix = "http://127.0.0.1:" + std::to_string(server->port());
    Client plain("127.0.0.1", server->port());
    plain.send(test::request_text(prefix + "/absolute?x=1"));
    const Reply reply = test::parse_reply(plain.read_to_end().bytes);
    EXPECT_EQ(reply.status, 200) << reply.error;
    EXPECT_TRUE(reply.body.starts_with("path=/absolute?x=1 id=")) << reply.body;

    Client site("127.0.0.1", server->port());
    site.send(test::request_text("http://lab.test:1234/site/moved-chapter"));
    const Reply moved = test::parse_reply(site.read_to_end().bytes);
    EXPECT_EQ(moved.status, 301) << moved.error;
    EXPECT_EQ(moved.header("location"), "http://lab.test:1234/site/docs/chapter-3");
}

TEST(LabServer, AnswersOtherMethodsWith405AndAnAllowHeader) {
    auto server = start_server();
    Client client("127.0.0.1", server->port());
    client.send(test::request_text("/", "DELETE"));
    const Reply reply = test::parse_reply(client.read_to_end().bytes);
    EXPECT_EQ(reply.status, 405) << reply.error;
    EXPECT_EQ(reply.header("allow"), "GET, HEAD");
}

TEST(LabServer, ClosesConnectionsWhoseClientVanishedMidRequest) {
    auto server = start_server();
    {
        Client silent("127.0.0.1", server->port());  // connects, sends nothing, leaves
    }
    {
        Client half("127.0.0.1", server->port());
        half.send("GET /half HT");
    }
    {
        Client reset("127.0.0.1", server->port());
        reset.send("GET /reset HTTP/1.1\r\nHost:");
        const linger abort{1, 0};
        setsockopt(reset.fd(), SOL_SOCKET, SO_LINGER, &abort, sizeof abort);
    }
    EXPECT_TRUE(eventually([&] { return server->stats().accepted == 3; }));
    EXPECT_TRUE(eventually([&] { return server->stats().open_connections == 0; }));
    EXPECT_EQ(server->stats().requests, 0u);
    // And it still serves.
    EXPECT_EQ(fetch(server->port(), "/").status, 200);
}

// A FIN cannot tell a client that left from one that half-closed and still reads: both are
// answered when the answer is due, and the connection then closes.
TEST(LabServer, ClosesAConnectionWhoseClientLeftDuringTheDelayOnceTheAnswerIsDue) {
    auto server = start_server(300ms);
    {
        Client client("127.0.0.1", server->port());
        client.send(test::request_text("/patient"));
        ASSERT_TRUE(eventually([&] { return server->stats().requests == 1; }));
        EXPECT_EQ(server->stats().open_connections, 1u);
    }
    EXPECT_TRUE(eventually([&] { return server->stats().open_connections == 0; }));
}

TEST(LabServer, ClosesAConnectionWhoseClientResetsDuringTheDelayAtOnce) {
    auto server = start_server(60s);
    {
        Client client("127.0.0.1", server->port());
        client.send(test::request_text("/patient"));
        ASSERT_TRUE(eventually([&] { return server->stats().requests == 1; }));
        const linger abort{1, 0};
        setsockopt(client.fd(), SOL_SOCKET, SO_LINGER, &abort, sizeof abort);
    }
    EXPECT_TRUE(eventually([&] { return server->stats().open_connections == 0; }));
}

// shutdown(SHUT_WR) after the request (what `nc -N` does) says "no more requests", not "gone": the
// client still reads, and gets its answer after the delay, or slowly from /fault/trickle.
TEST(LabServer, AnswersAClientThatHalfClosedAfterItsRequest) {
    auto server = start_server(200ms);
    for (const std::string target : {"/half-closed", "/fault/trickle"}) {
        SCOPED_TRACE(target);
        Client client("127.0.0.1", server->port());
        client.send(test::request_text(target));
        ASSERT_EQ(shutdown(client.fd(), SHUT_WR), 0);
        const test::ReadResult result = client.read_to_end();
        EXPECT_TRUE(result.closed);
        const Reply reply = test::parse_reply(result.bytes);
        EXPECT_EQ(reply.status, 200) << reply.error;
        EXPECT_TRUE(reply.body.starts_with("path=" + target + " id=")) << reply.body;
    }
}

LabServerOptions with_head_timeout(Duration head_timeout) {
    LabServerOptions options;
    options.hosts = {"127.0.0.1"};
    options.port = 0;
    options.delay = 0ms;
    options.head_timeout = head_timeout;
    return options;
}

// Without a bound, a client that trickles its head (or sends nothing) holds a descriptor for ever,
// and enough of them leave the server none to accept anyone else with.
TEST(LabServer, ClosesAConnectionWhoseHeadIsNotCompleteWhenTheHeadTimeoutPasses) {
    LabServer server(with_head_timeout(200ms));
    server.start();
    Client silent("127.0.0.1", server.port());
    Client slow("127.0.0.1", server.port());
    slow.send("GET /slow HTTP/1.1\r\nHost: 127.0.0.1\r\n");  // the blank line never comes
    for (Client* client : {&silent, &slow}) {
        const test::ReadResult result = client->read_to_end();  // gives up after 2 s
        EXPECT_TRUE(result.closed) << "still open: error " << result.error;
        EXPECT_EQ(result.bytes, "");
    }
    EXPECT_TRUE(eventually([&] { return server.stats().open_connections == 0; }));
    EXPECT_EQ(server.stats().requests, 0u);
    // The timeout runs from the accept to the end of the head only: a slow answer is not cut.
    EXPECT_EQ(fetch(server.port(), "/delay/400").status, 200);
}

TEST(LabServer, TakesAHeadTimeoutTooLongToAddToTheClockAsNeverForAWhile) {
    LabServer server(with_head_timeout(Duration::max()));
    server.start();
    EXPECT_EQ(fetch(server.port(), "/").status, 200);
}

TEST(LabServer, RunReturnsWhenStopIsCalledFromAnotherThread) {
    LabServerOptions options;
    options.hosts = {"127.0.0.1"};
    options.port = 0;
    LabServer server(options);
    auto running = std::async(std::launch::async, [&] { server.run(); });
    ASSERT_EQ(fetch(server.port(), "/").status, 200);  // run() is serving
    server.stop();
    EXPECT_EQ(running.wait_for(2s), std::future_status::ready);
}

TEST(LabServer, RunReturnsAtOnceWhenStopCameFirst) {
    LabServerOptions options;
    options.hosts = {"127.0.0.1"};
    options.port = 0;
    LabServer server(options);
    server.stop();
    auto running = std::async(std::launch::async, [&] { server.run(); });
    EXPECT_EQ(running.wait_for(2s), std::future_status::ready);
}

TEST(LabServer, ListensOnTheSameFreePortOnIPv4AndIPv6) {
    auto server = start_server();
    ASSERT_NE(server->port(), 0);
    EXPECT_EQ(fetch(server->port(), "/v4", "GET", "127.0.0.1").status, 200);
    if (!test::has_ipv6_loopback()) GTEST_SKIP() << "no IPv6 loopback here; IPv4 answered";
    EXPECT_EQ(fetch(server->port(), "/v6", "GET", "::1").status, 200);
}

TEST(LabServer, NamesItsFirstHostInItsUrl) {
    auto both = start_server();
    EXPECT_EQ(both->url("/x"), "http://127.0.0.1:" + std::to_string(both->port()) + "/x");
    if (!test::has_ipv6_loopback()) GTEST_SKIP() << "no IPv6 loopback here; the IPv4 URL was right";
    auto v6 = start_server(0ms, {"::1"});
    EXPECT_EQ(v6->url(), "http://[::1]:" + std::to_string(v6->port()) + "/");
}

TEST(LabServer, ThrowsNamingTheAddressWhenItsPortIsTaken) {
    auto first = start_server();
    LabServerOptions options;
    options.hosts = {"127.0.0.1"};
    options.port = first->port();
    const std::string address = "127.0.0.1:" + std::to_string(first->port());
    try {
        LabServer second(options);
        FAIL() << "a second server bound " << address;
    } catch (const std::runtime_error& error) {
        EXPECT_NE(std::string(error.what()).find(address), std::string::npos) << error.what();
    }
}

TEST(LabServer, ThrowsForAHostThatIsNotAnAddress) {
    LabServerOptions options;
    options.hosts = {"localhost"};
    options.port = 0;
    EXPECT_THROW(LabServer server(options), std::runtime_error);
}

// In-process, each request costs two descriptors (ours and the server's): a few hundred is plenty.
TEST(LabServer, AnswersHundredsOfConcurrentDelayedConnections) {
    constexpr int count = 300;
    auto server = start_server(300ms);
    std::vector<std::unique_ptr<Client>> clients;
    for (int i = 0; i < count; ++i) {
        clients.push_back(std::make_unique<Client>("127.0.0.1", server->port()));
        clients.back()->send(test::request_text("/c/" + std::to_string(i)));
    }
    // Were they answered one after another, 300 x 300 ms would run past every client's timeout.
    std::set<std::string> ids;
    for (int i = 0; i < count; ++i) {
        const Reply reply = test::parse_reply(clients[i]->read_to_end().bytes);
        ASSERT_EQ(reply.status, 200) << "client " << i << ": " << reply.error;
        const std::string id = reply.header("x-request-id");
        EXPECT_TRUE(reply.body.starts_with("path=/c/" + std::to_string(i) + " id=" + id + "\n"));
        ids.insert(id);
    }
    EXPECT_EQ(ids.size(), static_cast<std::size_t>(count));
    const LabStats stats = server->stats();
    EXPECT_EQ(stats.accepted, static_cast<std::uint64_t>(count));
    EXPECT_EQ(stats.requests, static_cast<std::uint64_t>(count));
    EXPECT_EQ(stats.requests_by_class.at("plain"), static_cast<std::uint64_t>(count));
}

TEST(LabServer, CountsInItsStatsExactlyWhatWasSent) {
    auto server = start_server();
    for (const char* target : {"/", "/", "/a?b", "/bytes/10", "/fault/close", "/site/"}) {
        fetch(server->port(), target);
    }
    {
        Client client("127.0.0.1", server->port());
        client.send("garbage\r\n\r\n");
        client.read_to_end();
    }
    ASSERT_TRUE(eventually([&] { return server->stats().open_connections == 0; }));
    const LabStats stats = server->stats();
    EXPECT_EQ(stats.accepted, 7u);
    EXPECT_EQ(stats.requests, 7u);
    const std::map<std::string, std::uint64_t> classes = {
        {"plain", 3}, {"bytes", 1}, {"fault", 1}, {"site", 1}, {"invalid", 1}};
    EXPECT_EQ(stats.requests_by_class, classes);
    const std::map<std::string, std::uint64_t> paths = {
        {"/", 2}, {"/a?b", 1}, {"/bytes/10", 1}, {"/fault/close", 1}, {"/site/", 1}};
    EXPECT_EQ(stats.requests_by_path, paths);

    // /stats says the same, counting itself and its own connection.
    const Reply reply = fetch(server->port(), "/stats");
    ASSERT_EQ(reply.status, 200) << reply.error;
    EXPECT_EQ(reply.header("content-type"), "application/json");
    EXPECT_EQ(reply.body,
              "{\"accepted\": 8, \"open_connections\": 1, \"requests\": 8, \"requests_by_class\": "
              "{\"bytes\": 1, \"fault\": 1, \"invalid\": 1, \"plain\": 3, \"site\": 1, \"stats\": 1}, "
              "\"distinct_paths\": 6, \"requests_by_path\": {\"/\": 2, \"/a?b\": 1, \"/bytes/10\": 1, "
              "\"/fault/close\": 1, \"/site/\": 1, \"/stats\": 1}}\n");
}

}  // namespace
}  // namespace sixways::lab
