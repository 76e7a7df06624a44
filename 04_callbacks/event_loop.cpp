// The reactor: epoll for descriptors, a binary heap for timers, and a ready queue. Read run_once
// first; everything else is bookkeeping for it.
#include "04_callbacks/event_loop.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <initializer_list>
#include <stdexcept>
#include <system_error>
#include <utility>

#include "common/explain.hpp"

namespace sixways::callbacks {

namespace {

// std::push_heap builds a max-heap; ordering by "later" puts the earliest deadline on top. Equal
// deadlines fall back to the order of scheduling, so they run first come, first served.
bool later(const std::shared_ptr<Timer>& a, const std::shared_ptr<Timer>& b) {
    if (a->when != b->when) return a->when > b->when;
    return a->sequence > b->sequence;
}

}  // namespace

EventLoop::EventLoop() : epoll_fd_(epoll_create1(EPOLL_CLOEXEC)) {
    if (epoll_fd_ < 0) throw std::system_error(errno, std::generic_category(), "epoll_create1");
}

EventLoop::~EventLoop() { close(epoll_fd_); }

// ---- One turn of the loop --------------------------------------------------------------------

// run_once is the only place where callbacks are called (asyncio's BaseEventLoop._run_once says the
// same of itself). A turn has two halves:
//
//   1. Collect. Wait in epoll_wait (no longer than the nearest timer allows), then append to the
//      ready queue the reader and writer of every descriptor epoll reported, then every timer
//      that is due. Nothing runs yet.
//   2. Run exactly the callbacks that are in the ready queue now, in order: first those that
//      call_soon queued during the last turn, then this turn's readers and writers, then its
//      timers. A callback that schedules another one does not run it: call_soon puts it in a
//      fresh queue, which runs at the start of the NEXT turn, after that turn has polled; a timer
//      goes into the heap and runs when a turn finds it due, after that turn's readers and
//      writers. So a callback that keeps rescheduling itself cannot starve the descriptors, and
//      every callback runs on a stack of depth one.
//
// The stale-event problem, and how it is solved
// ----------------------------------------------
// epoll_wait hands us a batch of events, and the callbacks for them run one after another. A
// callback early in the turn may finish a request: remove its reader, close its socket, cancel its
// timer, free the object that owns them. What the turn has queued for that request further on is
// then stale. Timers are collected after descriptors, so the usual case is a request whose last
// bytes and deadline arrive in the same turn: its reader runs first and completes it, and its
// timeout, queued behind it, must not run. A socket's event is stale when a callback before it
// (another descriptor's, or one queued by call_soon on the last turn) closed that socket. If
// epoll_event.data held a pointer to the owning object, that event would call into freed memory.
// Worse, the same callback may open a new socket, and the kernel hands out the lowest free number,
// so the new socket often gets the number just closed: a lookup "by fd" at dispatch time would
// deliver the old socket's event to the new socket's callback.
//
// So epoll_event.data holds only the descriptor number, and the number is looked up in watches_
// at COLLECT time, before any callback of this turn has run: then the table still describes exactly
// the registrations that epoll_wait reported on. What goes into the ready queue is the registration
// itself, a shared Handle, not a number and not a pointer to the owner. remove_reader marks that
// Handle cancelled, and the run half skips cancelled Handles. A new socket with a recycled number
// gets a new Handle, which no event of this batch refers to: the Handle is the registration's
// identity, and does the job a generation counter next to the number would. The shared_ptr keeps
// the Handle (and the std::function inside it) alive until the turn ends, even when its callback
// removes itself while running. The same holds for timers: a timer that is due and already queued
// in this turn is skipped if an earlier callback cancels it, so a response and its timeout never
// both happen.
//
// The price: one shared_ptr copy per event (a reference count, no allocation). A Handle is
// allocated once per add_reader/add_writer/call_later/call_soon, never per event.
void EventLoop::run_once() {
    const int count = epoll_wait(epoll_fd_, events_.data(), static_cast<int>(events_.size()),
                                 epoll_timeout_ms());
    explain::woke(count);
    if (count < 0 && errno != EINTR) {
        throw std::system_error(errno, std::generic_category(), "epoll_wait");
    }
    for (int i = 0; i < count; ++i) {
        const std::uint32_t events = events_[i].events;
        explain::event(events_[i].data.fd, events);
        const Watch& watch = watches_[events_[i].data.fd];
        // An error or a hang-up wakes both sides, whatever they asked for: the callback's own
        // recv(), send() or getsockopt() is how it learns what went wrong.
        const bool readable = events & (EPOLLIN | EPOLLERR | EPOLLHUP);
        const bool writable = events & (EPOLLOUT | EPOLLERR | EPOLLHUP);
        if (watch.reader && readable) ready_.push_back(watch.reader);
        if (watch.writer && writable) ready_.push_back(watch.writer);
    }

    const Clock::time_point now = time();
    while (!timers_.empty() && timers_.front()->when <= now) {
        std::pop_heap(timers_.begin(), timers_.end(), later);
        if (!timers_.back()->cancelled) ready_.push_back(std::move(timers_.back()));
        timers_.pop_back();
    }

    // From here on, new callbacks go to ready_ and wait for the next turn. The two vectors swap
    // roles every turn and keep their capacity: no allocation per event.
    running_.swap(ready_);  // running_ is empty: the last turn cleared it
    for (const std::shared_ptr<Handle>& handle : running_) {
        if (!handle->cancelled) handle->callback();
    }
    running_.clear();
}

void EventLoop::run() {
    if (is_running_) throw std::logic_error("EventLoop::run: the loop is already running");
    is_running_ = true;
    while (!ready_.empty() || watching_ > 0 || has_live_timers()) {
        run_once();
    }
    is_running_ = false;
}

// How long epoll_wait may sleep: not at all when callbacks are waiting, until the nearest deadline
// when there is a timer, for ever otherwise (run() only calls us when a descriptor is watched).
// milliseconds_until rounds UP: rounded down, epoll_wait would return just before the deadline,
// find no timer due, and wait again for 0 ms, spinning until the clock catches up.
int EventLoop::epoll_timeout_ms() {
    if (!ready_.empty()) return 0;
    if (!has_live_timers()) return -1;
    return milliseconds_until(time(), timers_.front()->when);
}

// ---- Descriptors -------------------------------------------------------------------------------

void EventLoop::add_watch(int fd, std::uint32_t direction, Callback callback) {
    if (fd < 0) throw std::invalid_argument("add_reader/add_writer: negative descriptor");
    if (static_cast<std::size_t>(fd) >= watches_.size()) watches_.resize(fd + 1);
    // epoll first: if it refuses, nothing has changed here.
    tell_epoll(fd, watches_[fd].registered | direction);
    std::shared_ptr<Handle>& slot =
        direction == EPOLLIN ? watches_[fd].reader : watches_[fd].writer;
    if (slot) {
        slot->cancelled = true;  // replaced: an event already queued for it must not run
    } else {
        ++watching_;
    }
    slot = std::make_shared<Handle>(std::move(callback));
}

bool EventLoop::remove_watch(int fd, std::uint32_t direction) {
    if (fd < 0 || static_cast<std::size_t>(fd) >= watches_.size()) return false;
    Watch& watch = watches_[fd];
    std::shared_ptr<Handle>& slot = direction == EPOLLIN ? watch.reader : watch.writer;
    if (!slot) return false;
    // Only flag it: if it is the callback running right now, destroying its std::function would
    // free the lambda, and what it captured, while it runs. The queue's reference frees it later.
    slot->cancelled = true;
    slot.reset();
    --watching_;
    tell_epoll(fd, watch.interest());
    return true;
}

// Tells epoll, at once, what fd waits for now: EPOLL_CTL_ADD for a descriptor epoll does not have
// yet, EPOLL_CTL_DEL for one that waits for nothing any more, EPOLL_CTL_MOD otherwise, and nothing
// when that is what epoll has already. Throws std::system_error if epoll refuses: EBADF, EPERM (a
// regular file), ENOMEM, ENOSPC (the per-user limit on watched descriptors).
void EventLoop::tell_epoll(int fd, std::uint32_t interest) {
    Watch& watch = watches_[fd];
    if (interest == watch.registered) return;
    const int operation = watch.registered == 0 ? EPOLL_CTL_ADD
                          : interest == 0       ? EPOLL_CTL_DEL
                                                : EPOLL_CTL_MOD;
    epoll_event event{};
    event.events = interest;
    event.data.fd = fd;  // only the number: see "The stale-event problem" above run_once
    if (epoll_ctl(epoll_fd_, operation, fd, &event) < 0) {
        throw std::system_error(errno, std::generic_category(), "epoll_ctl");
    }
    watch.registered = interest;
}

void EventLoop::remove_and_close(int fd) {
    if (fd < 0) return;
    if (static_cast<std::size_t>(fd) < watches_.size()) {
        Watch& watch = watches_[fd];
        for (std::shared_ptr<Handle>* slot : {&watch.reader, &watch.writer}) {
            if (!*slot) continue;
            (*slot)->cancelled = true;
            slot->reset();
            --watching_;
        }
        // close() below takes the socket out of epoll, so no EPOLL_CTL_DEL is needed. The next
        // socket with this number starts afresh, with an EPOLL_CTL_ADD.
        watch.registered = 0;
    }
    ::close(fd);  // never retried: Linux frees the number even when close() reports an error
    explain::call("close", fd, 0);
}

// ---- Timers and ready callbacks --------------------------------------------------------------

TimerHandle EventLoop::call_at(Clock::time_point when, Callback callback) {
    auto timer = std::make_shared<Timer>(when, next_sequence_++, std::move(callback));
    timers_.push_back(timer);
    std::push_heap(timers_.begin(), timers_.end(), later);
    return TimerHandle(std::move(timer));
}

TimerHandle EventLoop::call_later(Duration delay, Callback callback) {
    return call_at(deadline_after(time(), delay), std::move(callback));
}

void EventLoop::call_soon(Callback callback) {
    ready_.push_back(std::make_shared<Handle>(std::move(callback)));
}

// Taking a timer out of the middle of a heap is awkward, so a cancelled timer stays where it is,
// flagged, until it reaches the top (asyncio does the same). Here the cancelled ones at the top
// are dropped, so that the top is the nearest deadline that will really fire, if any.
bool EventLoop::has_live_timers() {
    while (!timers_.empty() && timers_.front()->cancelled) {
        std::pop_heap(timers_.begin(), timers_.end(), later);
        timers_.pop_back();
    }
    return !timers_.empty();
}

}  // namespace sixways::callbacks
