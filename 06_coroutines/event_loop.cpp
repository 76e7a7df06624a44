// The loop: epoll for descriptors, a binary heap for timers, a queue of ready Handles. Read
// run_once first; everything else is bookkeeping for it. Set it beside 04_callbacks/event_loop.cpp:
// the turn is the same.
#include "06_coroutines/event_loop.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <iostream>
#include <new>
#include <stdexcept>
#include <system_error>
#include <utility>

#include "06_coroutines/task.hpp"
#include "common/explain.hpp"

namespace sixways::coroutines {

namespace {

// std::push_heap builds a max-heap: ordering by "later" puts the earliest deadline on top.
bool later(const std::shared_ptr<Timer>& a, const std::shared_ptr<Timer>& b) {
    if (a->when != b->when) return a->when > b->when;
    return a->sequence > b->sequence;
}

}  // namespace

// A cancelled timer stays in the heap, flagged, until it reaches the top (asyncio and stage 04 do
// the same). Its callback goes now: it may own the object that owns its timer, and only releasing
// it breaks that circle. The callback may even own this very handle, so `this` is not touched once
// the callback is being destroyed, and the timer is kept alive by a local copy.
void TimerHandle::cancel() {
    if (!timer_ || timer_->cancelled) return;
    const std::shared_ptr<Timer> timer = timer_;
    timer->cancelled = true;
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
    running_.clear();
    timers_.clear();
    watches_.clear();
    ::close(epoll_fd_);
    if (tasks_lost_in_unwinding_ > 0) {
        std::cerr << "Event loop destroyed: " << tasks_lost_in_unwinding_
                  << " pending tasks were destroyed while an exception unwound\n";
    }
}

// ---- One turn of the loop ------------------------------------------------------------------------

// run_once is the only place where callbacks run and suspended tasks are resumed (asyncio's
// _run_once says the same of itself). A turn, as in stage 04:
//
//   1. Wait in epoll_wait: not at all if something is ready, until the nearest timer if there is
//      one, for ever otherwise.
//   2. Collect: queue the reader and writer of each descriptor epoll reported, then each timer
//      that is due. No code of anyone's runs yet, so every event is looked up in a table that no
//      callback has touched since epoll_wait: no event can be stale at this point. One kind of
//      reader runs here all the same, because it runs no code of anyone's either: a socket
//      wait's, which only removes itself and completes its future (which queues the steps of the
//      tasks waiting on it). So a task woken by its socket steps in this very turn, before the
//      timers that came due with it: an answer already in the socket beats a deadline that is due.
//   3. Run what is in the ready queue NOW: call_soon callbacks and task steps queued by the last
//      turn, then this turn's readers, writers and timers. What they queue (a task woken by a
//      future they completed, a call_soon) waits for the next turn, after the next poll. So
//      nothing can keep a turn going for ever and starve the sockets, and every step starts on
//      the loop's own stack, at depth one.
//
// Stale events. A callback early in the run may finish a request: remove its reader, cancel its
// timer, close its socket, and even open a new socket that gets the same number. What the turn
// queued for that request further on is then stale. It is a Handle, and removing or cancelling
// flags it: the run skips it. The new socket's reader is a new Handle that nothing in this turn's
// queue refers to. So a response and its timeout never both happen, and no event reaches a socket
// it was not for.
void EventLoop::run_once() {
    const int count = epoll_wait(epoll_fd_, events_.data(), static_cast<int>(events_.size()), epoll_timeout_ms());
    explain::woke(count);
    if (count < 0 && errno != EINTR) throw std::system_error(errno, std::generic_category(), "epoll_wait");
    for (int i = 0; i < count; ++i) {  // EINTR (a signal interrupted the wait): count < 0, no events
        const std::uint32_t events = events_[i].events;
        explain::event(events_[i].data.fd, events);
        const Watch& watch = watches_[static_cast<std::size_t>(events_[i].data.fd)];
        // An error or a hang-up wakes both sides: their own recv(), send() or getsockopt() says what.
        if (watch.reader && (events & (EPOLLIN | EPOLLERR | EPOLLHUP))) collect(watch.reader);
        if (watch.writer && (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) collect(watch.writer);
    }
    const Clock::time_point now = time();
    while (!timers_.empty() && timers_.front()->when <= now) {
        std::pop_heap(timers_.begin(), timers_.end(), later);
        if (!timers_.back()->cancelled) ready_.push_back(std::move(timers_.back()));
        timers_.pop_back();
    }
    running_.swap(ready_);  // ready_ is empty now, and collects what this turn queues
    for (const std::shared_ptr<Handle>& handle : running_) {
        if (!handle->cancelled) run_handle(*handle);
    }
    running_.clear();  // keeps its capacity: the next turns need no new memory for their queue
}

// `handle` is a copy: a socket wait's callback removes its own Handle from the table while it runs.
void EventLoop::collect(std::shared_ptr<Handle> handle) {
    if (handle->socket_wait) {
        handle->callback();
    } else {
        ready_.push_back(std::move(handle));
    }
}

// A reader, a writer or a task's step runs in place: removing it while it runs only flags it, and
// running_ keeps it alive until the turn ends. A call_soon or a timer runs once: its callback is
// moved out first, so that what it captured goes as soon as it has run, and a timer that cancels
// itself while it runs does not destroy the code that is running.
void EventLoop::run_handle(Handle& handle) {
    Callback once;
    if (handle.once) {
        once = std::move(handle.callback);
    }
    try {
        handle.once ? once() : handle.callback();
    } catch (const std::bad_alloc&) {
        throw;  // out of memory: leaves the loop and fetch_all, and the command line reports it
    } catch (const std::exception& error) {
        std::cerr << "Exception in callback: " << error.what() << '\n';
    } catch (...) {
        std::cerr << "Exception in callback: (not a std::exception)\n";
    }
}

// How long epoll_wait may sleep: not at all when something is ready (or stop() was called), until
// the nearest deadline when there is a timer, for ever otherwise. milliseconds_until rounds up, so
// the wait never ends just before a deadline and spins until the clock catches up.
int EventLoop::epoll_timeout_ms() {
    if (!ready_.empty() || stopping_) return 0;
    if (!has_live_timers()) return -1;
    return milliseconds_until(time(), timers_.front()->when);
}

// Drops the cancelled timers at the top of the heap, so that the top is the nearest deadline that
// will really fire, if any.
bool EventLoop::has_live_timers() {
    while (!timers_.empty() && timers_.front()->cancelled) {
        std::pop_heap(timers_.begin(), timers_.end(), later);
        timers_.pop_back();
    }
    return !timers_.empty();
}

std::size_t EventLoop::pending_timers() const {
    return static_cast<std::size_t>(
        std::count_if(timers_.begin(), timers_.end(), [](const auto& timer) { return !timer->cancelled; }));
}

// run_forever (until == null) and run_until_complete (until that future is done).
void EventLoop::run(const detail::FutureBase* until) {
    if (is_running_) throw std::logic_error("the event loop is already running");
    is_running_ = true;
    try {
        // A stop() that came before this call ends the first turn (asyncio does the same).
        while (until == nullptr || !until->done()) {
            if (!stopping_ && ready_.empty() && descriptors_watched_ == 0 && !has_live_timers()) {
                throw std::logic_error(
                    "event loop: nothing left to wait for (no ready task, no timer, no descriptor): "
                    "every pending task waits on a future that nothing will complete");
            }
            run_once();
            if (stopping_) break;
        }
    } catch (...) {
        is_running_ = stopping_ = false;
        throw;
    }
    is_running_ = stopping_ = false;
}

// ---- Descriptors ---------------------------------------------------------------------------------

std::shared_ptr<Handle> EventLoop::add_reader(int fd, Callback callback) {
    return add_watch(fd, EPOLLIN, std::move(callback), false);
}
std::shared_ptr<Handle> EventLoop::add_writer(int fd, Callback callback) {
    return add_watch(fd, EPOLLOUT, std::move(callback), false);
}
std::shared_ptr<Handle> EventLoop::add_socket_wait(int fd, bool writable, Callback callback) {
    return add_watch(fd, writable ? EPOLLOUT : EPOLLIN, std::move(callback), true);
}
bool EventLoop::remove_reader(int fd) { return remove_watch(fd, EPOLLIN, nullptr); }
bool EventLoop::remove_writer(int fd) { return remove_watch(fd, EPOLLOUT, nullptr); }
bool EventLoop::remove(int fd, const std::shared_ptr<Handle>& handle) {
    return handle && (remove_watch(fd, EPOLLIN, handle.get()) || remove_watch(fd, EPOLLOUT, handle.get()));
}

std::shared_ptr<Handle> EventLoop::add_watch(int fd, std::uint32_t direction, Callback callback,
                                             bool socket_wait) {
    if (closed_) return nullptr;
    if (fd < 0) throw std::invalid_argument("a negative descriptor cannot be watched");
    if (static_cast<std::size_t>(fd) >= watches_.size()) watches_.resize(static_cast<std::size_t>(fd) + 1);
    Watch& watch = watches_[static_cast<std::size_t>(fd)];
    tell_epoll(fd, watch.registered | direction);  // first: if epoll refuses, nothing has changed
    std::shared_ptr<Handle>& slot = direction == EPOLLIN ? watch.reader : watch.writer;
    if (slot) slot->cancelled = true;  // replaced: an event already queued for it must not run
    if (!slot && !(direction == EPOLLIN ? watch.writer : watch.reader)) ++descriptors_watched_;
    slot = std::make_shared<Handle>(std::move(callback), false, socket_wait);
    return slot;
}

// `only`: remove the callback only if it is that Handle; null: whatever is there.
bool EventLoop::remove_watch(int fd, std::uint32_t direction, const Handle* only) {
    if (closed_ || fd < 0 || static_cast<std::size_t>(fd) >= watches_.size()) return false;
    Watch& watch = watches_[static_cast<std::size_t>(fd)];
    std::shared_ptr<Handle>& slot = direction == EPOLLIN ? watch.reader : watch.writer;
    if (!slot || (only != nullptr && slot.get() != only)) return false;
    // Only flagged: if it is the callback running now, running_ holds it until the turn ends.
    slot->cancelled = true;
    slot.reset();
    if (watch.interest() == 0) --descriptors_watched_;
    tell_epoll(fd, watch.interest());
    return true;
}

// Tells epoll at once what fd waits for now: ADD for a descriptor epoll does not have, DEL when
// nothing is left, MOD otherwise. (Stage 04's deeper page measures batching these changes until
// the next poll, as libuv does.) Throws std::system_error if epoll refuses a new interest: EBADF,
// EPERM (a regular file), ENOMEM, ENOSPC (the per-user limit); then nothing has changed. A removal
// stands even if epoll refuses it (a descriptor closed too early has left epoll already), which is
// why remove_* can promise not to throw.
void EventLoop::tell_epoll(int fd, std::uint32_t interest) {
    Watch& watch = watches_[static_cast<std::size_t>(fd)];
    if (interest == watch.registered) return;
    const int operation = watch.registered == 0 ? EPOLL_CTL_ADD : interest == 0 ? EPOLL_CTL_DEL : EPOLL_CTL_MOD;
    epoll_event event{};
    event.events = interest;
    event.data.fd = fd;  // only the number, looked up before any callback runs: see run_once
    if (epoll_ctl(epoll_fd_, operation, fd, &event) < 0 && (interest & ~watch.registered) != 0) {
        throw std::system_error(errno, std::generic_category(), "epoll_ctl");
    }
    watch.registered = interest;
}

// ---- Timers and the ready queue --------------------------------------------------------------------

TimerHandle EventLoop::call_at(Clock::time_point when, Callback callback) {
    if (closed_) return TimerHandle();
    auto timer = std::make_shared<Timer>(when, timers_made_++, std::move(callback));
    timers_.push_back(timer);
    std::push_heap(timers_.begin(), timers_.end(), later);
    return TimerHandle(std::move(timer));
}

TimerHandle EventLoop::call_later(Duration delay, Callback callback) {
    return call_at(deadline_after(time(), delay), std::move(callback));
}

void EventLoop::call_soon(Callback callback) {
    if (!closed_) ready_.push_back(std::make_shared<Handle>(std::move(callback), true));
}

}  // namespace sixways::coroutines
