// The loop: epoll for descriptors, a binary heap for timers, a queue of ready callbacks and task
// steps. Read run_once first; everything else is bookkeeping for it.
#include "06_coroutines/event_loop.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <iostream>
#include <stdexcept>
#include <system_error>
#include <utility>

#include "06_coroutines/task.hpp"

namespace sixways::coroutines {

namespace {

// std::push_heap builds a max-heap: ordering by "later" puts the earliest deadline on top.
bool later(const std::shared_ptr<detail::Timer>& a, const std::shared_ptr<detail::Timer>& b) {
    if (a->when != b->when) return a->when > b->when;
    return a->sequence > b->sequence;
}

// epoll_event.data carries the descriptor and the generation of its registration (see run_once).
std::uint64_t pack(int fd, std::uint32_t generation) {
    return (std::uint64_t{generation} << 32) | static_cast<std::uint32_t>(fd);
}

}  // namespace

// A cancelled timer stays in the heap, flagged, until it reaches the top (asyncio does the same):
// taking it out of the middle of a heap is awkward. Its callback goes now. That callback may own
// this very handle (a callback that holds the object that holds its timer): so `this` is not
// touched once the callback is being destroyed, and the timer is kept alive by a local copy.
void TimerHandle::cancel() {
    if (!timer_ || timer_->cancelled) return;
    const std::shared_ptr<detail::Timer> timer = timer_;
    timer->cancelled = true;
    if (timer->loop != nullptr) ++timer->loop->cancelled_in_heap_;
    const Callback released = std::move(timer->callback);  // may destroy *this: nothing after it
}

EventLoop::EventLoop() : epoll_fd_(epoll_create1(EPOLL_CLOEXEC)) {
    if (epoll_fd_ < 0) throw std::system_error(errno, std::generic_category(), "epoll_create1");
}

EventLoop::~EventLoop() {
    // Pending tasks first, while everything they may touch on their way out still exists: their
    // frames remove readers, cancel timers and wake other waiters as they are destroyed.
    while (first_task_ != nullptr) first_task_->abandon();
    // Then the callbacks. Destroying one may call back into the loop (a reader that owns its
    // socket removes itself; a capture schedules a timer as it goes): from here on, those calls
    // drop what they are given and do nothing.
    closed_ = true;
    ready_.clear();
    running_now_.clear();
    for (const std::shared_ptr<detail::Timer>& timer : timers_) timer->loop = nullptr;
    timers_.clear();
    watches_.clear();
    ::close(epoll_fd_);
    if (tasks_lost_in_unwinding_ > 0) {
        std::cerr << "Event loop destroyed: " << tasks_lost_in_unwinding_
                  << " pending tasks went with an exception (out of memory?)\n";
    }
}

// ---- One turn of the loop ------------------------------------------------------------------------

// run_once is the only place where callbacks run and suspended tasks are resumed (asyncio's
// _run_once says the same of itself). A turn:
//
//   1. Wait in epoll_wait: not at all if something is ready to run, until the nearest timer if
//      there is one, for as long as it takes otherwise.
//   2. Call the reader or writer of each descriptor epoll reported.
//   3. Move the timers that are due to the ready queue.
//   4. Run what is in the ready queue NOW: callbacks, due timers, task steps. What they schedule
//      (a task woken by a future they completed, a call_soon, a timer already due) waits for the
//      next turn, after the next poll. So nothing can keep a turn going for ever and starve the
//      sockets, and every step starts on the loop's own stack, at depth one.
//
// Stale events. epoll_wait hands us a batch of events whose callbacks run one after another. One
// early in the batch may remove another descriptor's reader and close it, while an event for it is
// still waiting later in the batch; it may even open a new socket, and the kernel gives out the
// lowest free number, often the one just closed. So epoll_event.data holds no pointer (it could
// point to freed memory by then) but the descriptor number and a generation, which goes up each
// time the number leaves epoll. run_io drops an event whose generation is not the current one: it
// was for a registration that is gone. A timer has the same guard: cancelled earlier in the turn,
// it is skipped, so a response and its timeout never both happen.
void EventLoop::run_once() {
    int count = epoll_wait(epoll_fd_, events_.data(), static_cast<int>(events_.size()), poll_timeout_ms());
    if (count < 0) {
        if (errno != EINTR) throw std::system_error(errno, std::generic_category(), "epoll_wait");
        count = 0;  // a signal interrupted the wait: the rest of the turn still happens
    }
    for (int i = 0; i < count; ++i) {
        const std::uint32_t events = events_[i].events;
        const int fd = static_cast<int>(events_[i].data.u64 & 0xffffffffu);
        const auto generation = static_cast<std::uint32_t>(events_[i].data.u64 >> 32);
        // An error or a hang-up wakes both sides: their own recv(), send() or getsockopt() says what.
        if (events & (EPOLLIN | EPOLLERR | EPOLLHUP)) run_io(fd, generation, false);
        if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) run_io(fd, generation, true);
    }
    const Clock::time_point now = time();
    while (!timers_.empty() && timers_.front()->when <= now) {
        std::pop_heap(timers_.begin(), timers_.end(), later);
        std::shared_ptr<detail::Timer> timer = std::move(timers_.back());
        timers_.pop_back();
        timer->loop = nullptr;
        if (timer->cancelled) {
            --cancelled_in_heap_;
        } else {
            ready_.push_back(Ready{{}, std::move(timer), {}});
        }
    }
    run_ready();
}

void EventLoop::run_io(int fd, std::uint32_t generation, bool writer) {
    if (static_cast<std::size_t>(fd) >= watches_.size()) return;
    Watch& watch = watches_[static_cast<std::size_t>(fd)];
    const std::uint64_t id = writer ? watch.writer_id : watch.reader_id;
    if (watch.generation != generation || id == 0) return;  // stale: see run_once
    // Most callbacks remove themselves. Destroying a std::function while it runs would pull the
    // code out from under it, so it runs from a local, and goes back into its slot afterwards
    // unless it was removed or replaced meanwhile (then the registration has another id, or none).
    Callback callback = std::exchange(writer ? watch.writer : watch.reader, nullptr);
    run_callback(callback);
    Watch& after = watches_[static_cast<std::size_t>(fd)];  // the table may have grown meanwhile
    if ((writer ? after.writer_id : after.reader_id) == id) (writer ? after.writer : after.reader) = std::move(callback);
}

void EventLoop::run_ready() {
    running_now_.swap(ready_);  // ready_ is empty now, and collects what this turn schedules
    for (Ready& ready : running_now_) {
        if (ready.timer) {
            if (ready.timer->cancelled) continue;  // cancelled after it came due, earlier this turn
            Callback callback = std::move(ready.timer->callback);
            run_callback(callback);
        } else if (ready.callback) {
            run_callback(ready.callback);
        } else if (std::shared_ptr<TaskBase> task = ready.task.lock()) {
            task->step();  // `task` keeps it alive even if the step drops its last other handle
        }
    }
    running_now_.clear();  // keeps its capacity: the next turns need no new memory for their queue
}

void EventLoop::run_callback(Callback& callback) {
    try {
        callback();
    } catch (const std::exception& error) {
        std::cerr << "Exception in callback: " << error.what() << '\n';
    } catch (...) {
        std::cerr << "Exception in callback: (not a std::exception)\n";
    }
}

// Drops cancelled timers first. Every request cancels its deadline long before it is due, so
// when most of the heap is cancelled it is rebuilt without them (O(n) once per n cancellations, as
// asyncio does); then cancelled ones are popped off the top, so that the top is a real deadline.
int EventLoop::poll_timeout_ms() {
    if (timers_.size() >= 64 && cancelled_in_heap_ * 2 > timers_.size()) {
        std::erase_if(timers_, [](const std::shared_ptr<detail::Timer>& timer) {
            if (timer->cancelled) timer->loop = nullptr;
            return timer->cancelled;
        });
        std::make_heap(timers_.begin(), timers_.end(), later);
        cancelled_in_heap_ = 0;
    }
    while (!timers_.empty() && timers_.front()->cancelled) {
        std::pop_heap(timers_.begin(), timers_.end(), later);
        timers_.back()->loop = nullptr;
        timers_.pop_back();
        --cancelled_in_heap_;
    }
    if (!ready_.empty() || stopping_) return 0;
    if (timers_.empty()) return -1;
    return milliseconds_until(time(), timers_.front()->when);
}

void EventLoop::run_forever() {
    if (running_) throw std::logic_error("run_forever: the loop is already running");
    running_ = true;
    try {
        // A stop() that came before this call ends the first turn (asyncio does the same).
        do {
            if (!stopping_ && ready_.empty() && callbacks_watching_ == 0 && pending_timers() == 0) {
                throw std::logic_error(
                    "event loop: nothing left to wait for (no ready task, no timer, no descriptor): "
                    "every pending task waits on a future that nothing will complete");
            }
            run_once();
        } while (!stopping_);
    } catch (...) {
        running_ = stopping_ = false;
        throw;
    }
    running_ = stopping_ = false;
}

// ---- Descriptors ---------------------------------------------------------------------------------

Registration EventLoop::add_reader(int fd, Callback callback) { return add_watch(fd, false, std::move(callback)); }
Registration EventLoop::add_writer(int fd, Callback callback) { return add_watch(fd, true, std::move(callback)); }
bool EventLoop::remove_reader(int fd) { return remove_watch(fd, false, 0); }
bool EventLoop::remove_writer(int fd) { return remove_watch(fd, true, 0); }
bool EventLoop::remove(const Registration& registration) {
    return registration.id != 0 && remove_watch(registration.fd, registration.writer, registration.id);
}

// epoll hears of every change at once: ADD for a descriptor it does not have, MOD when the other
// direction is already registered, DEL when nothing is left. (Stage 04's deeper page measures
// batching these changes until the next poll, as libuv does.)
Registration EventLoop::add_watch(int fd, bool writer, Callback callback) {
    if (closed_) return Registration{};
    if (fd < 0) throw std::invalid_argument("add_reader/add_writer: negative descriptor");
    if (!callback) throw std::invalid_argument("add_reader/add_writer: empty callback");
    if (static_cast<std::size_t>(fd) >= watches_.size()) watches_.resize(static_cast<std::size_t>(fd) + 1);
    Watch& watch = watches_[static_cast<std::size_t>(fd)];
    const bool was_watched = watch.watched();
    std::uint64_t& id = writer ? watch.writer_id : watch.reader_id;
    const std::uint64_t old_id = id;
    id = ++registrations_;
    if (old_id == 0) {
        epoll_event event{};
        event.events = watch.interest();
        event.data.u64 = pack(fd, watch.generation);
        if (epoll_ctl(epoll_fd_, was_watched ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &event) < 0) {
            id = 0;  // EBADF, EPERM (a regular file), ENOMEM, ENOSPC (the per-user limit)
            throw std::system_error(errno, std::generic_category(), "epoll_ctl");
        }
        ++callbacks_watching_;
        if (!was_watched) ++descriptors_watched_;
    }
    (writer ? watch.writer : watch.reader) = std::move(callback);  // replaces any earlier one
    return Registration{fd, writer, id};
}

// id 0: whatever is registered; otherwise only that registration.
bool EventLoop::remove_watch(int fd, bool writer, std::uint64_t wanted) {
    if (closed_ || fd < 0 || static_cast<std::size_t>(fd) >= watches_.size()) return false;
    Watch& watch = watches_[static_cast<std::size_t>(fd)];
    std::uint64_t& id = writer ? watch.writer_id : watch.reader_id;
    if (id == 0 || (wanted != 0 && id != wanted)) return false;
    id = 0;
    (writer ? watch.writer : watch.reader) = nullptr;  // safe while it runs: run_io holds it
    --callbacks_watching_;
    if (watch.watched()) {
        epoll_event event{};
        event.events = watch.interest();
        event.data.u64 = pack(fd, watch.generation);
        epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &event);
    } else {
        epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
        ++watch.generation;  // an event of this turn for fd is for nobody now (run_once)
        --descriptors_watched_;
    }
    return true;
}

// ---- Timers and the ready queue --------------------------------------------------------------------

TimerHandle EventLoop::call_at(Clock::time_point when, Callback callback) {
    if (closed_) return TimerHandle();
    auto timer = std::make_shared<detail::Timer>(detail::Timer{when, timers_made_++, std::move(callback), this});
    timers_.push_back(timer);
    std::push_heap(timers_.begin(), timers_.end(), later);
    return TimerHandle(std::move(timer));
}

TimerHandle EventLoop::call_later(Duration delay, Callback callback) {
    return call_at(deadline_after(time(), delay), std::move(callback));
}

void EventLoop::call_soon(Callback callback) {
    if (!closed_) ready_.push_back(Ready{std::move(callback), {}, {}});
}

void EventLoop::schedule_step(TaskBase& task) {
    if (!closed_) ready_.push_back(Ready{{}, {}, task.weak_from_this()});
}

}  // namespace sixways::coroutines
