// The reactor: epoll for descriptors, a binary heap for timers, and a ready queue. Read run_once
// first; everything else is bookkeeping for it.
#include "04_callbacks/event_loop.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <initializer_list>
#include <stdexcept>
#include <system_error>
#include <utility>

namespace sixways::callbacks {

namespace {

// std::push_heap builds a max-heap; ordering by "later" puts the earliest deadline on top. Equal
// deadlines fall back to the order of scheduling, so they run first come, first served.
bool later(const std::shared_ptr<Timer>& a, const std::shared_ptr<Timer>& b) {
    if (a->when != b->when) return a->when > b->when;
    return a->sequence > b->sequence;
}

// Below this many timers a heap full of cancelled ones costs nothing worth a rebuild.
constexpr std::size_t min_heap_to_compact = 64;

}  // namespace

void TimerHandle::cancel() {
    if (timer_) timer_->loop->cancel_timer(*timer_);
}

EventLoop::EventLoop() : epoll_fd_(epoll_create1(EPOLL_CLOEXEC)) {
    if (epoll_fd_ < 0) throw std::system_error(errno, std::generic_category(), "epoll_create1");
}

EventLoop::~EventLoop() { close(epoll_fd_); }

// ---- One turn of the loop --------------------------------------------------------------------

// run_once is the only place where callbacks are called (asyncio's BaseEventLoop._run_once says the
// same of itself). A turn has two halves, after it has handed epoll the changes that the last turn
// made to what each descriptor waits for (apply_changes):
//
//   1. Collect. Wait in epoll_wait (no longer than the nearest timer allows), then append to the
//      ready queue the reader and writer of every descriptor epoll reported, then every timer
//      that is due. Nothing runs yet.
//   2. Run exactly the callbacks that were ready when the turn began running. A callback that
//      schedules another one (call_soon, or a timer that is already due) adds it to a fresh queue,
//      which the NEXT turn runs, after it has polled again. So a callback that keeps rescheduling
//      itself cannot starve the descriptors, and every callback runs on a stack of depth one.
//
// The stale-event problem, and how it is solved
// ----------------------------------------------
// epoll_wait hands us a batch of events, and the callbacks for them run one after another. A
// callback early in the turn may finish a request: remove its reader, close its socket, cancel its
// timer, free the object that owns them. What the turn has queued for that request further on is
// then stale. Descriptors are collected before timers, so the usual case is a request whose last
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
    apply_changes();
    const int count = epoll_wait(epoll_fd_, events_.data(), static_cast<int>(events_.size()),
                                 epoll_timeout_ms());
    if (count < 0 && errno != EINTR) {
        throw std::system_error(errno, std::generic_category(), "epoll_wait");
    }
    for (int i = 0; i < count; ++i) {
        const std::uint32_t events = events_[i].events;
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
        std::shared_ptr<Timer> timer = std::move(timers_.back());
        timers_.pop_back();
        timer->in_heap = false;
        if (timer->cancelled) {
            --cancelled_in_heap_;
        } else {
            ready_.push_back(std::move(timer));
        }
    }

    // From here on, new callbacks go to ready_ and wait for the next turn. The two vectors swap
    // roles every turn and keep their capacity: no allocation per event.
    running_.clear();  // normally empty already; not after a callback threw
    running_.swap(ready_);
    for (const std::shared_ptr<Handle>& handle : running_) {
        if (!handle->cancelled) handle->callback();
    }
    running_.clear();
}

void EventLoop::run() {
    if (is_running_) throw std::logic_error("EventLoop::run: the loop is already running");
    is_running_ = true;
    try {
        while (!ready_.empty() || watching_ > 0 || has_live_timers()) {
            run_once();
        }
    } catch (...) {
        is_running_ = false;
        throw;
    }
    is_running_ = false;
}

// How long epoll_wait may sleep: not at all when callbacks are waiting, until the nearest deadline
// when there is a timer, for ever otherwise (run() only calls us when a descriptor is watched).
int EventLoop::epoll_timeout_ms() {
    drop_cancelled_timers();
    if (!ready_.empty()) return 0;
    if (timers_.empty()) return -1;
    const Duration wait = timers_.front()->when - time();
    if (wait <= Duration::zero()) return 0;
    // Rounded UP to whole milliseconds: rounded down, epoll_wait would return just before the
    // deadline, find no timer due, and wait again for 0 ms, spinning until the clock catches up.
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(wait).count();
    return static_cast<int>(std::min<decltype(ms)>(ms, INT_MAX));
}

// ---- Descriptors -------------------------------------------------------------------------------

void EventLoop::add_reader(int fd, Callback callback) {
    add_watch(fd, Direction::read, std::move(callback));
}

void EventLoop::add_writer(int fd, Callback callback) {
    add_watch(fd, Direction::write, std::move(callback));
}

bool EventLoop::remove_reader(int fd) { return remove_watch(fd, Direction::read); }

bool EventLoop::remove_writer(int fd) { return remove_watch(fd, Direction::write); }

void EventLoop::add_watch(int fd, Direction direction, Callback callback) {
    if (fd < 0) throw std::invalid_argument("add_reader/add_writer: negative descriptor");
    if (static_cast<std::size_t>(fd) >= watches_.size()) watches_.resize(fd + 1);
    Watch& watch = watches_[fd];
    if (watch.registered == 0) {
        // New to epoll: add it now, so that a refusal reaches the caller. EBADF, EPERM (a regular
        // file), ENOMEM, ENOSPC (the per-user limit on watched descriptors).
        epoll_event event{};
        event.events = watch.interest() | (direction == Direction::read ? EPOLLIN : EPOLLOUT);
        event.data.fd = fd;  // only the number: see "The stale-event problem" above run_once
        if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event) < 0) {
            throw std::system_error(errno, std::generic_category(), "epoll_ctl");
        }
        watch.registered = event.events;
    } else {
        note_change(fd);  // epoll has it already: the new interest goes with the next batch
    }
    std::shared_ptr<Handle>& slot = watch.handle(direction);
    if (slot) {
        slot->cancelled = true;  // replaced: an event already queued for it must not run
    } else {
        ++watching_;
    }
    slot = std::make_shared<Handle>(std::move(callback));
}

bool EventLoop::remove_watch(int fd, Direction direction) {
    if (fd < 0 || static_cast<std::size_t>(fd) >= watches_.size()) return false;
    Watch& watch = watches_[fd];
    std::shared_ptr<Handle>& slot = watch.handle(direction);
    if (!slot) return false;
    // Only flag it: if it is the callback running right now, destroying its std::function would
    // pull the code out from under it. The ready queue's reference frees it at the end of the turn.
    slot->cancelled = true;
    slot.reset();
    --watching_;
    if (!watch.reader && !watch.writer) watch.emptied = true;
    note_change(fd);
    return true;
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
        // close() below takes the socket out of epoll: there is nothing left to tell epoll, and if
        // fd is in changed_, apply_changes finds nothing to do. The next socket with this number
        // starts afresh, with an EPOLL_CTL_ADD.
        watch.registered = 0;
        watch.emptied = false;
    }
    ::close(fd);  // never retried: Linux frees the number even when close() reports an error
}

void EventLoop::note_change(int fd) {
    Watch& watch = watches_[fd];
    if (watch.changed) return;
    watch.changed = true;
    changed_.push_back(fd);
}

// Tells epoll what each descriptor changed during the last turn now waits for: one epoll_ctl per
// descriptor, however many times its reader and writer came and went (libuv batches its changes
// the same way). A Fetcher, for instance, swaps its writer for a reader once its request is sent:
// one EPOLL_CTL_MOD, where telling epoll at once would take two. Changes wait for this moment
// without harm: nothing can happen to a descriptor in epoll until the next epoll_wait, and that
// comes right after.
//
// A descriptor closed with close() instead of remove_and_close() has left epoll already, without
// the loop knowing: then DEL fails (EBADF or ENOENT), which is fine, and MOD fails with ENOENT if
// a new socket took the number, which must then be ADDed. That is why a descriptor that was left
// with nothing to watch, and is wanted again, always gets a MOD, even for the interest it had.
void EventLoop::apply_changes() {
    int error = 0;
    for (const int fd : changed_) {
        Watch& watch = watches_[fd];
        watch.changed = false;
        const std::uint32_t wanted = watch.interest();
        const bool emptied = std::exchange(watch.emptied, false);
        // Nothing to tell: never added (or closed), or back as it was.
        if (watch.registered == 0 || (wanted == watch.registered && !emptied)) continue;
        if (wanted == 0) {
            epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
            watch.registered = 0;
            continue;
        }
        epoll_event event{};
        event.events = wanted;
        event.data.fd = fd;
        int done = epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &event);
        if (done < 0 && errno == ENOENT) done = epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event);
        if (done < 0) {
            error = errno;
            watch.registered = 0;
            continue;
        }
        watch.registered = wanted;
    }
    changed_.clear();
    // Only for a descriptor closed behind the loop's back whose number a new socket took, and then
    // only if epoll refuses that socket (ENOMEM, ENOSPC): its waits could never end.
    if (error != 0) throw std::system_error(error, std::generic_category(), "epoll_ctl");
}

// ---- Timers and ready callbacks --------------------------------------------------------------

TimerHandle EventLoop::call_at(Clock::time_point when, Callback callback) {
    auto timer = std::make_shared<Timer>(when, next_sequence_++, std::move(callback), *this);
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
// flagged, until it reaches the top (asyncio does the same). Its callback is released at once,
// unless it is already queued to run: then it may be the very callback that is cancelling it.
void EventLoop::cancel_timer(Timer& timer) {
    if (timer.cancelled) return;
    timer.cancelled = true;
    if (timer.in_heap) {
        ++cancelled_in_heap_;
        timer.callback = nullptr;
    }
}

// Keeps cancelled timers from piling up: when most of the heap is cancelled (every request of a
// run cancels its 10 s timeout long before it is due), rebuild it without them, in O(n) once per
// O(n) cancellations. Then pop any cancelled timers off the top, so the top is a real deadline.
void EventLoop::drop_cancelled_timers() {
    if (timers_.size() >= min_heap_to_compact && cancelled_in_heap_ * 2 > timers_.size()) {
        std::erase_if(timers_, [](const std::shared_ptr<Timer>& timer) {
            if (timer->cancelled) timer->in_heap = false;
            return timer->cancelled;
        });
        std::make_heap(timers_.begin(), timers_.end(), later);
        cancelled_in_heap_ = 0;
    }
    while (!timers_.empty() && timers_.front()->cancelled) {
        std::pop_heap(timers_.begin(), timers_.end(), later);
        timers_.back()->in_heap = false;
        timers_.pop_back();
        --cancelled_in_heap_;
    }
}

}  // namespace sixways::callbacks
