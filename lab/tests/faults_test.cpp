// /fault/NAME: each misbehaviour happens exactly as described, so the stages' tests can rely on it.
// Every client here gives up after a second at most.
#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "lab/labserver.hpp"
#include "lab/tests/test_client.hpp"

namespace sixways::lab {
namespace {

using namespace std::chrono_literals;
using test::Client;
using test::ReadResult;

class Faults : public ::testing::Test {
protected:
    void SetUp() override {
        LabServerOptions options;
        options.hosts = {"127.0.0.1"};
        options.port = 0;
        options.delay = 0ms;
        server = std::make_unique<LabServer>(options);
        server->start();
    }

    // Connects and sends GET /fault/NAME; the client gives up after a second.
    std::unique_ptr<Client> ask(const std::string& name) {
        auto client = std::make_unique<Client>("127.0.0.1", server->port(), 1000ms);
        client->send(test::request_text("/fault/" + name));
        return client;
    }

    bool server_closes_all_connections() {
        const auto deadline = std::chrono::steady_clock::now() + 1s;
        while (server->stats().open_connections != 0) {
            if (std::chrono::steady_clock::now() > deadline) return false;
            std::this_thread::sleep_for(5ms);
        }
        return true;
    }

    std::unique_ptr<LabServer> server;
};

std::string head_of(const std::string& bytes) { return bytes.substr(0, bytes.find("\r\n\r\n")); }

TEST_F(Faults, ResetSendsTheHeadAndPartOfTheBodyThenResets) {
    const ReadResult result = ask("reset")->read_to_end();
    EXPECT_EQ(result.error, ECONNRESET);
    EXPECT_FALSE(result.closed);
    EXPECT_TRUE(result.bytes.starts_with("HTTP/1.1 200 OK\r\n"));
    EXPECT_NE(result.bytes.find("\r\nContent-Length: 1000\r\n"), std::string::npos);
    const std::size_t body = result.bytes.size() - (result.bytes.find("\r\n\r\n") + 4);
    EXPECT_GT(body, 0u);
    EXPECT_LT(body, 1000u);
}

TEST_F(Faults, CloseClosesBeforeSendingAnyByte) {
    const ReadResult result = ask("close")->read_to_end();
    EXPECT_TRUE(result.closed);
    EXPECT_EQ(result.bytes, "");
}

TEST_F(Faults, PartialHeadersClosesInTheMiddleOfTheHead) {
    const ReadResult result = ask("partial-headers")->read_to_end();
    EXPECT_TRUE(result.closed);
    EXPECT_TRUE(result.bytes.starts_with("HTTP/1.1 200 OK\r\n"));
    EXPECT_EQ(result.bytes.find("\r\n\r\n"), std::string::npos);
}

TEST_F(Faults, TrickleSendsACompleteResponseOneByteAtATime) {
    auto client = ask("trickle");
    std::string bytes;
    int pieces = 0;
    while (true) {
        const ReadResult piece = client->read_at_least(1);
        if (piece.bytes.empty()) {
            EXPECT_TRUE(piece.closed) << "error " << piece.error;
            break;
        }
        bytes += piece.bytes;
        ++pieces;
    }
    const test::Reply reply = test::parse_reply(bytes);
    ASSERT_EQ(reply.status, 200) << reply.error;
    EXPECT_TRUE(reply.body.starts_with("path=/fault/trickle id=1\n"));
    // Sent all at once, it would arrive in one or two pieces; one byte every few milliseconds
    // arrives in about as many pieces as bytes (fewer when this thread is slow to read).
    EXPECT_GT(bytes.size(), 100u);
    EXPECT_GT(pieces, 10);
}

TEST_F(Faults, HangReadsTheRequestAndNeverAnswersButKeepsTheSocketOpen) {
    auto client = ask("hang");
    const ReadResult result = client->read_for(300ms);
    EXPECT_EQ(result.bytes, "");
    EXPECT_FALSE(result.closed);
    EXPECT_EQ(result.error, 0);
    EXPECT_EQ(server->stats().requests, 1u);
    EXPECT_EQ(server->stats().open_connections, 1u);
    client->close();
    EXPECT_TRUE(server_closes_all_connections());
}

TEST_F(Faults, StallSendsTheHeadAndPartOfTheBodyThenNothing) {
    auto client = ask("stall");
    ReadResult result = client->read_until("\r\n\r\n");
    ASSERT_FALSE(result.closed);
    EXPECT_NE(head_of(result.bytes).find("\r\nContent-Length: 1000"), std::string::npos);
    result.bytes += client->read_at_least(100).bytes;  // the 100 body bytes it does send
    const ReadResult after = client->read_for(300ms);
    EXPECT_EQ(after.bytes, "");
    EXPECT_FALSE(after.closed);
    const std::size_t body = result.bytes.size() - (result.bytes.find("\r\n\r\n") + 4);
    EXPECT_GT(body, 0u);
    EXPECT_LT(body, 1000u);
    client->close();
    EXPECT_TRUE(server_closes_all_connections());
}

TEST_F(Faults, BadStatusSendsAStatusLineWithoutAStatusCode) {
    const ReadResult result = ask("bad-status")->read_to_end();
    EXPECT_TRUE(result.closed);
    EXPECT_TRUE(result.bytes.starts_with("HTTP/1.1 abc Invalid Status\r\n"));
    EXPECT_EQ(test::parse_reply(result.bytes).status, 0);
}

TEST_F(Faults, ShortBodyClosesBeforeContentLengthBytes) {
    const ReadResult result = ask("short-body")->read_to_end();
    EXPECT_TRUE(result.closed);
    EXPECT_NE(head_of(result.bytes).find("\r\nContent-Length: 1000"), std::string::npos);
    const test::Reply reply = test::parse_reply(result.bytes);
    EXPECT_EQ(reply.status, 0);
    EXPECT_NE(reply.error.find("cut short"), std::string::npos) << reply.error;
}

TEST_F(Faults, BigHeadersSendsMoreThan64KiBOfHeadersThenABody) {
    const ReadResult result = ask("big-headers")->read_to_end();
    EXPECT_TRUE(result.closed);
    EXPECT_GT(result.bytes.find("\r\n\r\n"), 64u * 1024);
    const test::Reply reply = test::parse_reply(result.bytes);
    ASSERT_EQ(reply.status, 200) << reply.error;
    EXPECT_TRUE(reply.body.starts_with("path=/fault/big-headers id=1\n"));
}

TEST_F(Faults, BadChunkSendsAChunkSizeThatIsNotHexadecimal) {
    const ReadResult result = ask("bad-chunk")->read_to_end();
    EXPECT_TRUE(result.closed);
    const test::Reply reply = test::parse_reply(result.bytes);
    EXPECT_EQ(reply.status, 0);
    EXPECT_NE(reply.error.find("bad chunk size"), std::string::npos) << reply.error;
}

TEST_F(Faults, KeepOpenSendsACompleteResponseAndKeepsTheSocketOpen) {
    auto client = ask("keep-open");
    const ReadResult result = client->read_until("keep-open id=1\n");  // the end of its body
    ASSERT_FALSE(result.closed);
    const ReadResult after = client->read_for(300ms);
    EXPECT_EQ(after.bytes, "");
    EXPECT_FALSE(after.closed);
    const test::Reply reply = test::parse_reply(result.bytes);
    ASSERT_EQ(reply.status, 200) << reply.error;
    EXPECT_EQ(reply.body, "path=/fault/keep-open id=1\n");
    EXPECT_EQ(reply.header("connection"), "");  // the request's "Connection: close" is ignored
    EXPECT_EQ(server->stats().open_connections, 1u);
    client->close();
    EXPECT_TRUE(server_closes_all_connections());
}

TEST_F(Faults, NoBodySends204AndKeepsTheSocketOpen) {
    auto client = ask("no-body");
    const ReadResult result = client->read_until("\r\n\r\n");
    ASSERT_FALSE(result.closed);
    const ReadResult after = client->read_for(300ms);
    EXPECT_EQ(after.bytes, "");
    EXPECT_FALSE(after.closed);
    EXPECT_TRUE(result.bytes.starts_with("HTTP/1.1 204 No Content\r\n"));
    EXPECT_TRUE(result.bytes.ends_with("\r\n\r\n"));
    EXPECT_EQ(test::parse_reply(result.bytes).status, 204);
    client->close();
    EXPECT_TRUE(server_closes_all_connections());
}

TEST_F(Faults, FoldedHeaderContinuesAHeaderOnTheNextTwoLines) {
    const ReadResult result = ask("folded-header")->read_to_end();
    EXPECT_TRUE(result.closed);
    EXPECT_TRUE(result.bytes.starts_with("HTTP/1.1 200 OK\r\n"));
    EXPECT_NE(result.bytes.find("\r\nX-Folded: first part\r\n second part\r\n\t third part\r\n"), std::string::npos)
        << result.bytes;
    EXPECT_TRUE(result.bytes.ends_with("\r\n\r\npath=/fault/folded-header id=1\n")) << result.bytes;
}

TEST_F(Faults, AnUnknownFaultIsA404ThatListsTheKnownOnes) {
    const test::Reply reply = test::fetch(server->port(), "/fault/gremlins");
    EXPECT_EQ(reply.status, 404) << reply.error;
    EXPECT_NE(reply.body.find("keep-open"), std::string::npos);
    EXPECT_NE(reply.body.find("folded-header"), std::string::npos);
}

}  // namespace
}  // namespace sixways::lab
