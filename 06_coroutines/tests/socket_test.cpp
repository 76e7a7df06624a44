// The socket calls: what they return, and that a wait that ends early (cancelled, or its task
// destroyed) leaves no registration in epoll and no descriptor open.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <tuple>

#include "06_coroutines/socket.hpp"
#include "06_coroutines/task.hpp"
#include "06_coroutines/tests/helpers.hpp"
#include "06_coroutines/wait_for.hpp"

namespace sixways::coroutines {
namespace {

using namespace std::chrono_literals;
using testing_support::Counted;
using testing_support::epoll_watches;
using testing_support::expect_loop_is_clean;
using testing_support::run_one_turn;
using testing_support::run_within;
using testing_support::socket_pair;

class SocketTest : public testing_support::LeakCheckedTest {};

Coroutine<std::string> receive_all(EventLoop& loop, int fd) {
    std::string all;
    for (;;) {
        const std::string data = co_await sock_recv(loop, fd, 4096);
        if (data.empty()) co_return all;
        all += data;
    }
}

TEST_F(SocketTest, SockRecvReturnsWhatArrivedAndAnEmptyStringAtTheEndOfTheStream) {
    EventLoop loop;
    int ours = -1;
    int theirs = -1;
    std::tie(ours, theirs) = socket_pair();
    Task<std::string> receiving = loop.create_task(receive_all(loop, ours));
    run_one_turn(loop);  // nothing has arrived: it waits
    EXPECT_TRUE(epoll_watches(ours));
    ASSERT_EQ(::write(theirs, "hello", 5), 5);
    run_one_turn(loop);
    ::close(theirs);
    EXPECT_EQ(run_within(loop, receiving), "hello");
    EXPECT_FALSE(epoll_watches(ours));
    ::close(ours);
}

TEST_F(SocketTest, WaitReadableFinishesWhenBytesArriveAndLeavesThemToBeRead) {
    EventLoop loop;
    int ours = -1;
    int theirs = -1;
    std::tie(ours, theirs) = socket_pair();
    Future<void> readable = wait_readable(loop, ours);
    run_one_turn(loop);  // nothing has arrived: it waits
    EXPECT_FALSE(readable.done());
    EXPECT_TRUE(epoll_watches(ours));
    ASSERT_EQ(::write(theirs, "hello", 5), 5);
    run_within(loop, readable);
    EXPECT_EQ(loop.watched_descriptors(), 0u);
    char buffer[16];
    EXPECT_EQ(::recv(ours, buffer, sizeof buffer, MSG_DONTWAIT), 5);  // still there for sock_recv
    ::close(ours);
    ::close(theirs);
}

TEST_F(SocketTest, WaitReadableWaitsForATurnEvenWhenBytesAreThereAlready) {
    EventLoop loop;
    int ours = -1;
    int theirs = -1;
    std::tie(ours, theirs) = socket_pair();
    ASSERT_EQ(::write(theirs, "hello", 5), 5);
    Future<void> readable = wait_readable(loop, ours);
    EXPECT_FALSE(readable.done());  // no try first: only epoll says it is readable
    run_within(loop, readable);
    ::close(ours);
    ::close(theirs);
}

Coroutine<std::string> wait_for_a_byte(EventLoop& loop, int fd) {
    co_await wait_readable(loop, fd);
    co_return "readable";
}

// The byte and the deadline are both there when the loop next looks: the socket wait completes
// during the collect, so its task steps before the timer runs, and the answer wins. (Were the task
// stepped a turn later, the deadline would cancel it first, and a request whose answer had arrived
// in time would fail with a timeout.)
TEST_F(SocketTest, AnAnswerThatArrivesInTheTurnItsDeadlineComesDueBeatsTheDeadline) {
    EventLoop loop;
    int ours = -1;
    int theirs = -1;
    std::tie(ours, theirs) = socket_pair();
    Task<std::string> task = loop.create_task(wait_for(loop, wait_for_a_byte(loop, ours), 50ms));
    run_one_turn(loop);  // the task waits for the byte; the deadline is set
    ASSERT_EQ(::write(theirs, "x", 1), 1);
    std::this_thread::sleep_for(100ms);  // the loop is away: the deadline comes due too
    EXPECT_EQ(run_within(loop, task), "readable");
    expect_loop_is_clean(loop);
    ::close(ours);
    ::close(theirs);
}

TEST_F(SocketTest, SockSendallSendsEverythingEvenWhenTheSendBufferFillsUp) {
    EventLoop loop;
    int ours = -1;
    int theirs = -1;
    std::tie(ours, theirs) = socket_pair();
    std::string big(4 * 1024 * 1024, 'x');  // far more than a socket buffer holds
    for (std::size_t i = 0; i < big.size(); i += 4096) big[i] = static_cast<char>('a' + i / 4096 % 26);
    auto send_then_close = [](EventLoop& l, int fd, std::string data) -> Coroutine<void> {
        co_await sock_sendall(l, fd, std::move(data));
        ::shutdown(fd, SHUT_WR);
    };
    Task<void> sending = loop.create_task(send_then_close(loop, ours, big));
    EXPECT_EQ(run_within(loop, receive_all(loop, theirs)), big);
    run_within(loop, sending);
    ::close(ours);
    ::close(theirs);
}

TEST_F(SocketTest, SockRecvReportsAResetAsASocketError) {
    EventLoop loop;
    // A TCP connection on loopback, so that the peer can reset it (SO_LINGER 0, then close).
    Socket listener = Socket::open(loop, AF_INET);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    ASSERT_EQ(::bind(listener.fd(), reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    ASSERT_EQ(::listen(listener.fd(), 1), 0);
    ASSERT_EQ(::getsockname(listener.fd(), reinterpret_cast<sockaddr*>(&address), &length), 0);
    Address target;
    std::memcpy(&target.storage, &address, sizeof address);
    target.length = sizeof address;
    Socket client = Socket::open(loop, AF_INET);
    run_within(loop, sock_connect(loop, client.fd(), target));
    Socket server(loop, ::accept(listener.fd(), nullptr, nullptr));
    ASSERT_TRUE(server);
    const linger reset{1, 0};
    ::setsockopt(server.fd(), SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
    server.close();
    try {
        run_within(loop, sock_recv(loop, client.fd(), 100));
        ADD_FAILURE() << "no error";
    } catch (const SocketError& error) {
        EXPECT_EQ(error.error_number(), ECONNRESET);
        EXPECT_STREQ(error.what(), "recv: Connection reset by peer");
    }
}

TEST_F(SocketTest, SockConnectReportsARefusedConnection) {
    EventLoop loop;
    // A port that nobody listens on: bind one, and never listen.
    Socket placeholder = Socket::open(loop, AF_INET);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    ASSERT_EQ(::bind(placeholder.fd(), reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    ASSERT_EQ(::getsockname(placeholder.fd(), reinterpret_cast<sockaddr*>(&address), &length), 0);
    Address target;
    std::memcpy(&target.storage, &address, sizeof address);
    target.length = sizeof address;
    Socket client = Socket::open(loop, AF_INET);
    try {
        run_within(loop, sock_connect(loop, client.fd(), target));
        ADD_FAILURE() << "connected";
    } catch (const SocketError& error) {
        EXPECT_STREQ(error.what(), "connect: Connection refused");
    }
    EXPECT_EQ(loop.watched_descriptors(), 0u);
}

Coroutine<std::string> receive_once(EventLoop& loop, int fd) { co_return co_await sock_recv(loop, fd, 100); }

TEST_F(SocketTest, CancellingASocketWaitRemovesItsReaderFromTheLoopAndFromEpollAtOnce) {
    EventLoop loop;
    int ours = -1;
    int theirs = -1;
    std::tie(ours, theirs) = socket_pair();
    Task<std::string> receiving = loop.create_task(receive_once(loop, ours));
    run_one_turn(loop);
    ASSERT_TRUE(epoll_watches(ours));
    receiving.cancel();
    EXPECT_EQ(loop.watched_descriptors(), 0u);  // the reader can never be called again
    EXPECT_FALSE(epoll_watches(ours));
    EXPECT_THROW(run_within(loop, receiving), CancelledError);
    expect_loop_is_clean(loop);  // nothing registered, nothing to wait for
    ::close(ours);
    ::close(theirs);
}

Coroutine<void> own_socket_and_wait(EventLoop& loop, int fd, Counted held) {
    Socket socket(loop, fd);  // closed when this frame goes, however it goes
    Counted local(held.value);
    co_await sock_recv(loop, socket.fd(), 100);
}

TEST_F(SocketTest, DestroyingAPendingTaskClosesTheSocketItOwnedAndUnregistersIt) {
    EventLoop loop;
    int ours = -1;
    int theirs = -1;
    std::tie(ours, theirs) = socket_pair();
    const int alive = Counted::alive();
    std::optional<Task<void>> task = loop.create_task(own_socket_and_wait(loop, ours, Counted(1)));
    run_one_turn(loop);
    ASSERT_TRUE(epoll_watches(ours));
    testing::internal::CaptureStderr();
    task.reset();
    const std::string errors = testing::internal::GetCapturedStderr();
    EXPECT_NE(errors.find("Task was destroyed but it is pending!"), std::string::npos);
    EXPECT_EQ(Counted::alive(), alive);
    EXPECT_FALSE(epoll_watches(ours));
    expect_loop_is_clean(loop);
    char byte;
    EXPECT_EQ(::read(theirs, &byte, 1), 0);  // the peer sees the end of the stream: `ours` closed
    ::close(theirs);
}

// A waits on a socket that is then closed; the kernel gives its number to a new socket, on which B
// waits. A's wait ends late (cancelled): it must remove its own reader, which is gone, and not B's.
TEST_F(SocketTest, ASocketWaitThatEndsAfterItsSocketClosedLeavesTheNextSocketWithThatNumberAlone) {
    EventLoop loop;
    int first = -1;
    int first_peer = -1;
    std::tie(first, first_peer) = socket_pair();
    Socket old_socket(loop, first);
    Task<std::string> a = loop.create_task(receive_once(loop, old_socket.fd()));
    run_one_turn(loop);  // A waits
    old_socket.close();  // removes A's reader, and closes
    ::close(first_peer);
    int second = -1;
    int second_peer = -1;
    std::tie(second, second_peer) = socket_pair();
    ASSERT_EQ(second, first);  // the lowest free number: the one just closed
    Socket new_socket(loop, second);
    Task<std::string> b = loop.create_task(receive_once(loop, new_socket.fd()));
    run_one_turn(loop);  // B waits, on the same number
    a.cancel();
    EXPECT_THROW(run_within(loop, a), CancelledError);
    EXPECT_TRUE(epoll_watches(second));  // B's reader is still there
    ASSERT_EQ(::write(second_peer, "for B", 5), 5);
    EXPECT_EQ(run_within(loop, b), "for B");
    ::close(second_peer);
}

}  // namespace
}  // namespace sixways::coroutines
