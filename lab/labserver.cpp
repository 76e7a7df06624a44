// The lab server's event loop: one thread, one epoll instance, one timer heap.
//
// This file is the "how": sockets, readiness, timers, descriptors. What each path answers lives in
// responses.cpp, so the loop below reads as a short list of moves. It is the same shape as stage 04's
// reactor, seen from the server's side: accept, read a request, wait (on a timer, never by sleeping),
// write the answer, close. One thread holds 10,000 slow requests at once because a waiting request
// costs a few hundred bytes of state and an entry in the timer heap, not a thread.
//
// Every connection goes through these phases, in this order (see Phase below):
//
//   reading    until the request head is complete, or cannot be parsed, or head_timeout passes
//   waiting    until its timer fires (the delay); skipped when the answer has no wait
//   writing    until every byte is sent
//   trickling  instead of writing, for /fault/trickle: one byte per timer
//   holding    after the answer: our side is shut down (our FIN) and whatever the client still
//              sends is read and dropped, until it closes (or a timer fires); then the connection
//              is closed: the normal end. Faults that keep the socket open hold without the FIN.
//
// Level-triggered epoll. Each connection watches only what its phase needs (EPOLLIN while reading,
// EPOLLOUT only after the kernel said EAGAIN while writing, nothing but the errors epoll always
// reports while waiting), and level-triggered means a handler may stop early (a write budget, one
// read per event) without losing a wake-up: the kernel reports the socket again on the next
// epoll_wait. Edge-triggered would save a few wake-ups but would oblige every handler to drain
// its socket until EAGAIN, and a forgotten drain would hang a connection forever.
#include "lab/labserver.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <mutex>
#include <queue>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "lab/request.hpp"
#include "lab/responses.hpp"

namespace sixways::lab {
namespace {

std::string error_text(int error_number) { return std::generic_category().message(error_number); }

// The longest accept queue the system allows. listen() silently cuts a bigger backlog down to
// net.core.somaxconn, so asking for exactly that makes the figure visible here. A burst of 10,000
// connects waits in this queue until the loop accepts them; a short queue would drop SYNs and make
// clients retry after a second.
int listen_backlog() {
    std::ifstream file("/proc/sys/net/core/somaxconn");
    int value = 0;
    if (file >> value && value > 0) return value;
    return SOMAXCONN;
}

// A numeric address ("127.0.0.1", "::1") and a port, as a socket address. Host names are not
// accepted: a server binds to addresses, and resolving a name could give several.
bool make_address(const std::string& host, std::uint16_t port, sockaddr_storage& storage,
                  socklen_t& length) {
    storage = {};
    auto* v4 = reinterpret_cast<sockaddr_in*>(&storage);
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&storage);
    if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(port);
        length = sizeof(sockaddr_in);
        return true;
    }
    if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(port);
        length = sizeof(sockaddr_in6);
        return true;
    }
    return false;
}

// Opens a listening socket. On failure returns -1 with errno set, and `failed_call` names the call.
int open_listener(const sockaddr_storage& address, socklen_t length, int backlog,
                  const char*& failed_call) {
    const int fd = socket(address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        failed_call = "socket";
        return -1;
    }
    const int on = 1;
    // The server closes first, so the TIME_WAIT of every connection is on this side, on this port.
    // Without SO_REUSEADDR a restarted server could not bind its port for a minute.
    bool ok = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) == 0;
    failed_call = "setsockopt(SO_REUSEADDR)";
    // Without IPV6_V6ONLY (whose default is a system setting), an IPv6 socket bound to "::" also
    // takes IPv4 connections, as ::ffff:a.b.c.d, and clashes with an IPv4 listener on the same port.
    // For ::1 it changes nothing; setting it makes the server's intent independent of the system.
    if (ok && address.ss_family == AF_INET6) {
        ok = setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on) == 0;
        failed_call = "setsockopt(IPV6_V6ONLY)";
    }
    if (ok) {
        ok = bind(fd, reinterpret_cast<const sockaddr*>(&address), length) == 0;
        failed_call = "bind";
    }
    if (ok) {
        ok = listen(fd, backlog) == 0;
        failed_call = "listen";
    }
    if (!ok) {
        const int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

std::uint16_t bound_port(int fd) {
    sockaddr_storage storage{};
    socklen_t length = sizeof storage;
    getsockname(fd, reinterpret_cast<sockaddr*>(&storage), &length);
    if (storage.ss_family == AF_INET6) {
        return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
    }
    return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
}

// "127.0.0.1:8080", "[::1]:8080"
std::string host_and_port(const std::string& host, std::uint16_t port) {
    const bool ipv6 = host.find(':') != std::string::npos;
    return (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

// Past this many distinct targets, new ones are no longer recorded in requests_by_path (they are
// still counted everywhere else): a long run with distinct paths must not grow without bound.
constexpr std::size_t max_recorded_paths = 100'000;

// A connection sends at most this much per wake-up, so one fast client reading a gigabyte cannot
// keep the loop from everyone else. Level-triggered epoll wakes us again while it can write more.
constexpr std::size_t write_budget = 1024 * 1024;

// After an answer, how long a client may keep its side open before we close anyway.
constexpr Duration drain_limit = std::chrono::seconds(1);

// While accepting is paused for lack of descriptors: when to try again even if none of our own
// connections closed (ENFILE is system-wide: another process may free descriptors).
constexpr Duration accept_retry = std::chrono::milliseconds(100);

enum class Phase {
    reading,    // reading the request head
    waiting,    // the answer is due when a timer fires
    writing,    // sending the answer
    trickling,  // sending the answer one byte per timer
    holding,    // nothing more to send; waiting for the client to close (or a timer)
};

// Everything the server keeps per connection: a few hundred bytes, no buffers of its own (reads go
// to one buffer shared by the loop; big bodies are slices of static text).
struct Connection {
    int fd = -1;
    Phase phase = Phase::reading;
    std::uint32_t events = EPOLLIN;  // what epoll watches for it now
    std::uint64_t timer = 0;         // the sequence number of its pending timer, 0 for none
    RequestParser request;
    Answer answer;
};

// The timers live in a min-heap ordered by due time. Every plain request waits the same delay, so a
// FIFO queue would do for those alone; the heap also serves /delay/MS, the slow pages of the site,
// the ticks of /fault/trickle and the retry of a paused accept, at O(log n) per timer.
struct Timer {
    Clock::time_point when;
    std::uint64_t sequence;  // unique, and increasing: timers due at the same time fire in order
    int fd;                  // the connection to wake, or -1 to resume accepting

    bool operator>(const Timer& other) const {
        return when != other.when ? when > other.when : sequence > other.sequence;
    }
};

}  // namespace

struct LabServer::Impl {
    LabServerOptions options;
    std::uint16_t port = 0;
    std::vector<std::string> listening_hosts;  // the hosts actually bound, in the order given
    std::string own_host;                      // "127.0.0.1:PORT": the first of them
    std::vector<int> listeners;
    int epoll_fd = -1;
    int wake_fd = -1;  // an eventfd: stop() writes to it, the loop sees it readable and returns

    // Indexed by descriptor: the kernel hands out the lowest free number, so this stays dense.
    std::vector<std::unique_ptr<Connection>> connections;
    std::priority_queue<Timer, std::vector<Timer>, std::greater<>> timers;
    std::uint64_t timer_sequence = 0;
    bool accepting_paused = false;
    bool warned_about_pause = false;
    std::uint64_t resume_timer = 0;
    std::array<char, RequestParser::max_head_bytes> read_buffer{};

    // The loop is the only writer of `stats`, and takes the lock to write; other threads take it to
    // read. The loop reads without the lock: reads do not race with reads.
    mutable std::mutex stats_mutex;
    LabStats stats;

    std::thread thread;

    explicit Impl(LabServerOptions options_) : options(std::move(options_)) {}
    ~Impl();

    void open_listeners();
    void run();
    int run_due_timers();
    void accept_connections(int listener);
    void add_connection(int fd);
    void pause_accepting(int error_number);
    void resume_accepting();
    void handle_event(Connection& connection, std::uint32_t events);
    void read_request(Connection& connection);
    void start_answer(Connection& connection, Answer answer);
    void begin_sending(Connection& connection);
    void send_answer(Connection& connection);
    void send_trickle_byte(Connection& connection);
    void finish(Connection& connection);
    void discard_input(Connection& connection);
    void on_timer(Connection& connection);
    void close_connection(Connection& connection);
    void watch(Connection& connection, std::uint32_t events);
    void set_timer(Connection& connection, Duration delay);
    std::uint64_t count_request(std::string_view klass, const std::string* target);
};

// ---- Setting up ----

// Binds every host on the same port. With port 0 the first bind picks a free port and the others
// take the same one; if that port is busy on another host, we start over (a few times).
void LabServer::Impl::open_listeners() {
    const int backlog = listen_backlog();
    constexpr int attempts = 10;
    for (int attempt = 1;; ++attempt) {
        std::uint16_t chosen_port = options.port;
        bool start_over = false;
        for (const std::string& host : options.hosts) {
            sockaddr_storage address{};
            socklen_t length = 0;
            if (!make_address(host, chosen_port, address, length)) {
                throw std::runtime_error("labserver: '" + host + "' is not an IPv4 or IPv6 address");
            }
            const char* failed_call = "";
            const int fd = open_listener(address, length, backlog, failed_call);
            if (fd < 0) {
                const int error = errno;
                // A machine without IPv6 has no ::1: serve on the other hosts, if there are any.
                const bool no_ipv6 = address.ss_family == AF_INET6 &&
                                     (error == EAFNOSUPPORT || error == EADDRNOTAVAIL);
                if (no_ipv6 && options.hosts.size() > 1) {
                    std::cerr << "labserver: warning: cannot listen on " << host << " ("
                              << error_text(error) << "); continuing without it\n";
                    continue;
                }
                for (int listener : listeners) close(listener);
                listeners.clear();
                listening_hosts.clear();
                if (error == EADDRINUSE && options.port == 0 && attempt < attempts) {
                    start_over = true;
                    break;
                }
                throw std::runtime_error("labserver: " + std::string(failed_call) + " " +
                                         host_and_port(host, chosen_port) + ": " + error_text(error));
            }
            if (chosen_port == 0) chosen_port = bound_port(fd);
            listeners.push_back(fd);
            listening_hosts.push_back(host);
        }
        if (start_over) continue;
        if (listeners.empty()) throw std::runtime_error("labserver: no address to listen on");
        port = chosen_port;
        own_host = host_and_port(listening_hosts.front(), port);
        return;
    }
}

LabServer::LabServer(LabServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {
    Impl& self = *impl_;
    self.epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    if (self.epoll_fd < 0) throw std::system_error(errno, std::generic_category(), "epoll_create1");
    self.wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (self.wake_fd < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
    self.open_listeners();

    std::vector<int> watched = self.listeners;
    watched.push_back(self.wake_fd);
    for (int fd : watched) {
        epoll_event event{};
        event.events = EPOLLIN;
        event.data.fd = fd;
        if (epoll_ctl(self.epoll_fd, EPOLL_CTL_ADD, fd, &event) != 0) {
            throw std::system_error(errno, std::generic_category(), "epoll_ctl");
        }
    }
}

LabServer::Impl::~Impl() {
    for (auto& connection : connections) {
        if (connection) close(connection->fd);
    }
    for (int listener : listeners) close(listener);
    if (wake_fd >= 0) close(wake_fd);
    if (epoll_fd >= 0) close(epoll_fd);
}

LabServer::~LabServer() {
    stop();
    if (impl_->thread.joinable()) impl_->thread.join();
}

std::uint16_t LabServer::port() const { return impl_->port; }

std::string LabServer::url(const std::string& path) const {
    return "http://" + impl_->own_host + path;
}

void LabServer::start() {
    impl_->thread = std::thread([this] { impl_->run(); });
}

void LabServer::run() { impl_->run(); }

// Only write(): it is async-signal-safe and thread-safe, and an eventfd never blocks a write of 1
// (its counter would have to reach 2^64 - 1 first).
void LabServer::stop() {
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t written = write(impl_->wake_fd, &one, sizeof one);
}

LabStats LabServer::stats() const {
    std::lock_guard lock(impl_->stats_mutex);
    return impl_->stats;
}

// ---- The loop ----

// One round: run the timers that are due, wait for readiness until the next timer is due, handle
// each ready descriptor. Returns when stop() was called.
void LabServer::Impl::run() {
    std::array<epoll_event, 256> events{};
    while (true) {
        const int timeout_ms = run_due_timers();
        const int count = epoll_wait(epoll_fd, events.data(), static_cast<int>(events.size()),
                                     timeout_ms);
        if (count < 0) {
            if (errno == EINTR) continue;  // a signal; its handler may have called stop()
            throw std::system_error(errno, std::generic_category(), "epoll_wait");
        }
        // Each descriptor appears at most once in a batch, and a connection is only ever closed by
        // the handler of its own event (or by a timer, which runs outside the batch), so an event
        // below never reaches a new connection that reused a closed one's descriptor number.
        // Except in one case: close() takes a socket out of epoll only once no other process
        // holds a copy of it, and a process that starts a child (as the tests do, with this server
        // on a thread of theirs) lends the child a copy of every descriptor until its exec closes
        // them. An event can then come for a connection already closed; it is skipped.
        for (int i = 0; i < count; ++i) {
            const int fd = events[i].data.fd;
            if (fd == wake_fd) {
                std::uint64_t value = 0;
                [[maybe_unused]] const ssize_t ignored = read(wake_fd, &value, sizeof value);
                return;  // events not handled yet stay ready: level-triggered epoll keeps them
            }
            if (std::find(listeners.begin(), listeners.end(), fd) != listeners.end()) {
                accept_connections(fd);
            } else if (Connection* connection = connections[fd].get()) {
                handle_event(*connection, events[i].events);
            }
        }
    }
}

// Fires every timer that is due and returns how long epoll_wait may sleep: until the next timer,
// rounded UP to a millisecond (rounded down, a timer 0.4 ms away would make epoll_wait return at
// once, again and again, until it is due: a busy loop), or -1 when there is none.
int LabServer::Impl::run_due_timers() {
    const Clock::time_point now = Clock::now();
    while (!timers.empty() && timers.top().when <= now) {
        const Timer timer = timers.top();
        timers.pop();
        if (timer.fd < 0) {
            resume_timer = 0;
            if (accepting_paused) resume_accepting();
            continue;
        }
        // A timer is cancelled by forgetting it: if its connection has closed, or now waits for
        // another timer, this one is stale. Cheaper than removing it from the middle of the heap.
        Connection* connection = connections[timer.fd].get();
        if (connection == nullptr || connection->timer != timer.sequence) continue;
        connection->timer = 0;
        on_timer(*connection);
    }
    if (timers.empty()) return -1;
    const auto wait = std::chrono::ceil<std::chrono::milliseconds>(timers.top().when - Clock::now());
    return static_cast<int>(std::clamp<std::int64_t>(wait.count(), 0, INT_MAX));
}

// ---- Accepting ----

// Accepts until the queue is empty (EAGAIN): with a burst of thousands of connects, one accept per
// wake-up would cost one epoll_wait per connection.
void LabServer::Impl::accept_connections(int listener) {
    while (true) {
        const int fd = accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            add_connection(fd);
            continue;
        }
        switch (errno) {
            case EAGAIN:
                return;
            // This connection failed before we got it (Linux reports the new socket's pending
            // network error from accept); the next one may be fine.
            case EINTR:
            case ECONNABORTED:
            case EPROTO:
            case EPERM:
            case ENETDOWN:
            case ENETUNREACH:
            case EHOSTDOWN:
            case EHOSTUNREACH:
            case ENONET:
            case ENOPROTOOPT:
                continue;
            default:  // EMFILE, ENFILE, ENOBUFS, ENOMEM: out of descriptors or memory
                pause_accepting(errno);
                return;
        }
    }
}

void LabServer::Impl::add_connection(int fd) {
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.fd = fd;
    if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &event) != 0) {
        const int error = errno;  // ENOMEM or ENOSPC (fs.epoll.max_user_watches): out of resources
        close(fd);
        pause_accepting(error);
        return;
    }
    if (static_cast<std::size_t>(fd) >= connections.size()) connections.resize(fd + 1);
    connections[fd] = std::make_unique<Connection>();
    connections[fd]->fd = fd;
    // The whole head must arrive within head_timeout. Without this bound a client that sends a
    // byte now and then, or nothing at all, holds a descriptor for ever, and a few thousand such
    // clients leave the server none to accept anyone else with ("slowloris").
    set_timer(*connections[fd], options.head_timeout);
    std::lock_guard lock(stats_mutex);
    ++stats.accepted;
    ++stats.open_connections;
}

// Out of descriptors. The pending connection stays in the listen queue, so with level-triggered
// epoll the listener would be reported ready again at once: a loop spinning at 100 % CPU, accepting
// nothing. Instead we stop watching the listeners until one of our connections closes (or a short
// timer passes), then accept as many as fit. Nobody is turned away: the clients wait in the backlog
// until there is room. (The other classic answer is a spare descriptor kept open: close it, accept
// the connection, close it at once, reopen the spare. It turns clients away with an error instead.)
void LabServer::Impl::pause_accepting(int error_number) {
    if (!warned_about_pause) {
        warned_about_pause = true;
        std::cerr << "labserver: accept: " << error_text(error_number)
                  << "; new connections wait in the listen queue until one closes"
                     " (this message is shown once)\n";
    }
    accepting_paused = true;
    for (int listener : listeners) {
        epoll_event event{};
        event.events = 0;
        event.data.fd = listener;
        epoll_ctl(epoll_fd, EPOLL_CTL_MOD, listener, &event);
    }
    if (resume_timer == 0) {
        resume_timer = ++timer_sequence;
        timers.push({Clock::now() + accept_retry, resume_timer, -1});
    }
}

void LabServer::Impl::resume_accepting() {
    accepting_paused = false;
    for (int listener : listeners) {
        epoll_event event{};
        event.events = EPOLLIN;
        event.data.fd = listener;
        epoll_ctl(epoll_fd, EPOLL_CTL_MOD, listener, &event);
    }
}

// ---- Serving a connection ----

void LabServer::Impl::handle_event(Connection& connection, std::uint32_t events) {
    switch (connection.phase) {
        case Phase::reading: read_request(connection); break;
        case Phase::writing: send_answer(connection); break;
        case Phase::holding: discard_input(connection); break;
        case Phase::waiting:
        case Phase::trickling:
            // Nothing is watched now, and epoll reports only EPOLLHUP or EPOLLERR: the connection
            // was reset while its answer was due, so nobody is left to answer.
            if (events & (EPOLLHUP | EPOLLERR)) close_connection(connection);
            break;
    }
}

// One read per readiness event; a head longer than one read arrives over several events.
void LabServer::Impl::read_request(Connection& connection) {
    const ssize_t received = recv(connection.fd, read_buffer.data(), read_buffer.size(), 0);
    if (received == 0) {
        close_connection(connection);  // the client left before finishing its request
        return;
    }
    if (received < 0) {
        if (errno != EAGAIN && errno != EINTR) close_connection(connection);  // e.g. ECONNRESET
        return;
    }
    RequestParser& request = connection.request;
    switch (request.feed(std::string_view(read_buffer.data(), static_cast<std::size_t>(received)))) {
        case RequestParser::Status::need_more:
            return;
        case RequestParser::Status::invalid: {
            const std::uint64_t id = count_request("invalid", nullptr);
            start_answer(connection, error_answer(request.error_status(), request.error(), id));
            return;
        }
        case RequestParser::Status::complete: {
            const RequestHead& head = request.head();
            const std::uint64_t id = count_request(request_class(head.target), &head.target);
            start_answer(connection, answer(head, id, {options.delay, own_host, &stats}));
            return;
        }
    }
}

// The head is read: the head timeout no longer applies (forgetting its timer cancels it).
//
// While the answer waits, the connection watches nothing, not even EPOLLRDHUP. A FIN from the
// client means only that it will send nothing more: a client that half-closes after its request
// (shutdown(SHUT_WR), `nc -N`) still reads, and is owed its answer. A FIN cannot tell that client
// from one that closed and left, so both are answered when the answer is due; for one that left,
// the send then fails (or its kernel resets the connection) and the connection is closed. The
// cost is a descriptor held until then: at most the answer's wait (the delay, or /delay/MS, which
// stops at 10 minutes).
void LabServer::Impl::start_answer(Connection& connection, Answer answer) {
    connection.request = RequestParser();  // the head is answered; keep none of it
    connection.answer = std::move(answer);
    connection.timer = 0;
    if (connection.answer.wait > Duration::zero()) {
        connection.phase = Phase::waiting;
        watch(connection, 0);
        set_timer(connection, connection.answer.wait);
        return;
    }
    begin_sending(connection);
}

void LabServer::Impl::begin_sending(Connection& connection) {
    if (connection.answer.trickle) {
        // Without TCP_NODELAY, Nagle's algorithm would hold each byte back until the previous one
        // is acknowledged, and the bytes would arrive in clumps instead of one by one.
        const int on = 1;
        setsockopt(connection.fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
        connection.phase = Phase::trickling;
        watch(connection, 0);  // as while waiting: a half-closed client still reads
        send_trickle_byte(connection);
        return;
    }
    connection.phase = Phase::writing;
    send_answer(connection);
}

// Sends until the answer is complete, the kernel's send buffer is full (EAGAIN: wait for EPOLLOUT
// and come back), or this wake-up's budget is spent. One sendmsg takes the text and a slice of
// filler together, so a small answer is one system call.
void LabServer::Impl::send_answer(Connection& connection) {
    Output& output = connection.answer.output;
    std::size_t sent_now = 0;
    while (true) {
        if (output.drained() && !output.refill()) {
            finish(connection);
            return;
        }
        if (sent_now >= write_budget) {
            watch(connection, EPOLLOUT);
            return;
        }
        std::array<iovec, 2> parts{};
        std::size_t count = 0;
        const std::size_t text_left = output.text.size() - output.text_sent;
        if (text_left > 0) {
            parts[count++] = {output.text.data() + output.text_sent, text_left};
        }
        if (output.filler_left > 0) {
            const std::string_view slice = filler_text(
                output.filler_position, static_cast<std::size_t>(std::min<std::uint64_t>(
                                            output.filler_left, write_budget)));
            parts[count++] = {const_cast<char*>(slice.data()), slice.size()};
        }
        msghdr message{};
        message.msg_iov = parts.data();
        message.msg_iovlen = count;
        // MSG_NOSIGNAL: a client that has gone away gives us EPIPE here instead of a SIGPIPE that
        // would kill the whole server.
        const ssize_t sent = sendmsg(connection.fd, &message, MSG_NOSIGNAL);
        if (sent < 0) {
            if (errno == EAGAIN) {
                watch(connection, EPOLLOUT);
            } else if (errno != EINTR) {
                close_connection(connection);  // EPIPE, ECONNRESET: the client is gone
            }
            return;
        }
        sent_now += static_cast<std::size_t>(sent);
        const std::size_t from_text = std::min(static_cast<std::size_t>(sent), text_left);
        output.text_sent += from_text;
        output.filler_left -= sent - from_text;
        output.filler_position += sent - from_text;
    }
}

void LabServer::Impl::send_trickle_byte(Connection& connection) {
    Output& output = connection.answer.output;
    const ssize_t sent = send(connection.fd, output.text.data() + output.text_sent, 1, MSG_NOSIGNAL);
    if (sent < 0 && errno != EAGAIN && errno != EINTR) {
        close_connection(connection);
        return;
    }
    if (sent == 1) ++output.text_sent;
    if (output.text_sent == output.text.size()) {
        finish(connection);
        return;
    }
    set_timer(connection, trickle_interval);
}

// The answer is sent (or there was nothing to send): end the connection the way the answer asks.
void LabServer::Impl::finish(Connection& connection) {
    switch (connection.answer.ending) {
        case Ending::close:
            // Not close() at once: bytes the client sent that we never read (a body, a pipelined
            // request) would make the kernel answer with a reset, and the client could lose the
            // end of the answer. Our FIN says the answer is complete; the client's close ends it.
            shutdown(connection.fd, SHUT_WR);
            connection.phase = Phase::holding;
            watch(connection, EPOLLIN);
            set_timer(connection, drain_limit);
            return;
        case Ending::reset: {
            // A zero linger time makes close() send RST instead of FIN: the client's next recv
            // fails with ECONNRESET, after the bytes that already arrived.
            const linger abort{1, 0};
            setsockopt(connection.fd, SOL_SOCKET, SO_LINGER, &abort, sizeof abort);
            close_connection(connection);
            return;
        }
        case Ending::keep_open:
            connection.phase = Phase::holding;
            watch(connection, EPOLLIN);
            return;
    }
}

// Holding: whatever the client sends is read and dropped; its close ends the connection.
void LabServer::Impl::discard_input(Connection& connection) {
    const ssize_t received = recv(connection.fd, read_buffer.data(), read_buffer.size(), 0);
    if (received == 0 || (received < 0 && errno != EAGAIN && errno != EINTR)) {
        close_connection(connection);
    }
}

void LabServer::Impl::on_timer(Connection& connection) {
    switch (connection.phase) {
        case Phase::waiting: begin_sending(connection); break;
        case Phase::trickling: send_trickle_byte(connection); break;
        case Phase::holding: close_connection(connection); break;  // drain_limit has passed
        case Phase::reading: close_connection(connection); break;  // head_timeout has passed
        case Phase::writing: break;  // no timer is set in this phase
    }
}

// Closing the descriptor also removes it from epoll (no other descriptor refers to the socket).
// The Connection is destroyed here: callers must not touch it afterwards.
void LabServer::Impl::close_connection(Connection& connection) {
    const int fd = connection.fd;
    close(fd);
    connections[fd].reset();
    {
        std::lock_guard lock(stats_mutex);
        --stats.open_connections;
    }
    if (accepting_paused) resume_accepting();  // a descriptor is free again
}

void LabServer::Impl::watch(Connection& connection, std::uint32_t events) {
    if (connection.events == events) return;
    epoll_event event{};
    event.events = events;
    event.data.fd = connection.fd;
    // Modifying a registered socket fails only for a bug (EBADF, ENOENT): say so loudly.
    if (epoll_ctl(epoll_fd, EPOLL_CTL_MOD, connection.fd, &event) != 0) {
        throw std::system_error(errno, std::generic_category(), "epoll_ctl(EPOLL_CTL_MOD)");
    }
    connection.events = events;
}

void LabServer::Impl::set_timer(Connection& connection, Duration delay) {
    connection.timer = ++timer_sequence;
    timers.push({deadline_after(Clock::now(), delay), connection.timer, connection.fd});
}

// Counts a request and returns its number, the X-Request-Id.
std::uint64_t LabServer::Impl::count_request(std::string_view klass, const std::string* target) {
    std::lock_guard lock(stats_mutex);
    ++stats.requests;
    ++stats.requests_by_class[std::string(klass)];
    if (target != nullptr) {
        const auto found = stats.requests_by_path.find(*target);
        if (found != stats.requests_by_path.end()) {
            ++found->second;
        } else if (stats.requests_by_path.size() < max_recorded_paths) {
            stats.requests_by_path.emplace(*target, 1);
        }
    }
    return stats.requests;
}

}  // namespace sixways::lab
