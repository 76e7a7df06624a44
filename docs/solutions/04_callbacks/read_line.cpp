#include "read_line.hpp"

#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <memory>
#include <string_view>
#include <utility>

#include "common/fetch.hpp"

namespace sixways::solutions {

namespace {

// What would be locals of one function in stage 01 (the buffer, the deadline, the socket) are the
// members of an object here, because each callback returns before the next one can run.
class LineReader : public std::enable_shared_from_this<LineReader> {
public:
    LineReader(callbacks::EventLoop& loop, int fd, std::function<void(LineOutcome)> done)
        : loop_(loop), fd_(fd), done_(std::move(done)) {}

    // The callbacks hold a shared_ptr to this object: it lives as long as the loop may call it.
    void start(Duration timeout) {
        std::shared_ptr<LineReader> self = shared_from_this();
        loop_.add_reader(fd_, [self] { self->on_readable(); });  // may throw: nothing else done yet
        timeout_ = loop_.call_later(timeout, [self] { self->finish({"", "timeout"}); });
    }

private:
    void on_readable() {
        std::array<char, 4096> buffer;
        for (;;) {
            const ssize_t n = ::recv(fd_, buffer.data(), buffer.size(), 0);
            if (n < 0) {
                if (errno == EINTR) continue;
                if (errno == EAGAIN || errno == EWOULDBLOCK) return;  // the rest comes later
                finish({"", errno_message("recv", errno)});
                return;
            }
            if (n == 0) {
                finish({"", "closed"});
                return;
            }
            const std::string_view piece(buffer.data(), static_cast<std::size_t>(n));
            const std::size_t newline = piece.find('\n');
            if (newline == std::string_view::npos) {
                line_.append(piece);  // no end of line yet: keep it for the next call
                continue;
            }
            line_.append(piece.substr(0, newline));
            if (!line_.empty() && line_.back() == '\r') line_.pop_back();
            finish({std::move(line_), ""});
            return;
        }
    }

    // Every ending comes here, and its first job is to make sure no other ending can run: the
    // timer is cancelled and the reader removed, so the loop skips them even if they are already
    // queued in this very turn. The timer's callback holds a shared_ptr to
    // this object and this object holds the timer: forgetting the TimerHandle breaks that cycle,
    // so the object is freed once the loop lets go of the timer.
    void finish(LineOutcome outcome) {
        timeout_.cancel();
        timeout_ = callbacks::TimerHandle{};
        loop_.remove_reader(fd_);
        done_(std::move(outcome));
    }

    callbacks::EventLoop& loop_;
    int fd_;
    std::function<void(LineOutcome)> done_;
    std::string line_;  // what has arrived of the line so far
    callbacks::TimerHandle timeout_;
};

}  // namespace

void read_line(callbacks::EventLoop& loop, int fd, Duration timeout,
               std::function<void(LineOutcome)> done) {
    std::make_shared<LineReader>(loop, fd, std::move(done))->start(timeout);
}

}  // namespace sixways::solutions
