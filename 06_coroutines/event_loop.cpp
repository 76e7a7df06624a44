// The loop: epoll for descriptors, a binary heap for timers, a queue of ready callbacks and task
// steps. Read run_once first; everything else is bookkeeping for it.
#include "06_coroutines/event_loop.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <exception>
#include <iostream>
#include <stdexcept>
#include <system_error>
#include <utility>

#include "06_coroutines/task.hpp"

namespace sixways::coroutines {

namespace {

// std::push_heap builds a max-heap; ordering by "later" puts the earliest deadline on top. Equal
// deadlines fall back to the order of scheduling: first come, first served.
bool later(const std::shared_ptr<detail::Timer>& a, const std::shared_ptr<detail::Timer>& b) {
    if (a->when != b->when) return a->when > b->when;
    return a->sequence > b->sequence;
}

// Below this many timers, a heap full of cancelled ones is not worth a rebuild.
constexpr std::size_t min_heap_to_compact = 64;

// epoll_event.data carries the descriptor and the generation of its registration (see run_once).
std::uint64_t pack(int fd, std::uint32_t generation) {
    return (std::uint64_t{generation} << 32) | static_cast<std::uint32_t>(fd);
}

}  // namespace

// Taking a timer out of the middle of a heap is awkward, so a cancelled timer stays where it is,
// flagged, until it reaches the top or the heap is compacted (asyncio does the same).
void TimerHandle::cancel() {
    if (!timer_ || timer_->cancelled) return;
    timer_->cancelled = true;
    timer_->callback = nullptr;  // release what it captured now, not when it reaches the top
    if (timer_->in_heap) ++timer_->loop->cancelled_in_heap_;
}

EventLoop::EventLoop() : epoll_fd_(epoll_create1(EPOLL_CLOEXEC)) {
    if (epoll_fd_ < 0) throw std::system_error(errno, std::generic_category(), "epoll_create1");
}

EventLoop::~EventLoop() {
    // Pending tasks first, while everything they may touch on their way out still exists: their
    // frames unregister readers, cancel timers and wake other waiters as they are destroyed.
    // Destroying one task may destroy others (the tasks it held), which leave the list by themselves.
    while (first_task_ != nullptr) first_task_->abandon();
    ready_.clear();
    for (const std::shared_ptr<detail::Timer>& timer : timers_) {
        timer->in_heap = false;  // a TimerHandle that outlives us must not reach back into us
    }
    timers_.clear();
    watches_.clear();
    ::close(epoll_fd_);
}

// ---- One turn of the loop ------------------------------------------------------------------------

// run_once is the only place where callbacks run and where suspended tasks are resumed (asyncio's
// _run_once says the same of itself; the one thing that runs elsewhere is the first step of a task
// started by co_await, inside the step that awaits it, like a function call). A turn:
//
//   0. Hand epoll the changes the last turn made to what each descriptor waits for (apply_changes).
//   1. Wait in epoll_wait: not at all if something is ready to run, until the nearest timer if
//      there is one, for as long as it takes otherwise.
//   2. Call the reader or writer of each descriptor epoll reported.
//   3. Call each timer that is due.
//   4. Run the callbacks and task steps that are in the ready queue NOW. Whatever they schedule
//      (a task woken by a future they completed, a call_soon) waits for the next turn, after the
//      next poll. So a task that keeps waking itself cannot starve the sockets, and every step
//      starts on the loop's own stack, at depth one. That is why a million co_awaits in a row
//      cannot overflow the stack: no coroutine ever resumes another one (task.hpp).
//
// The stale-event problem, and how it is solved
// ----------------------------------------------
// epoll_wait hands us a batch of events, and their callbacks run one after another. A callback
// early in the batch may remove the reader of another descriptor and close it (a proxy closing both
// sides of a connection, say), and free the object behind it, while an event for that descriptor
// is still waiting later in the same batch. Worse, the same callback may open a new socket, and the
// kernel hands out the lowest free number, so the new socket often gets the number just closed.
// (This stage's own readers only complete a future, and the tasks they wake run in step 4, after
// the whole batch; but add_reader takes any callback, and the loop must be safe for all of them.)
//
// So epoll_event.data never holds a pointer (it could point to freed memory by the time we read
// it). It holds the descriptor number AND a generation: watches_[fd] counts how many times the
// number was left with no reader and no writer, or closed. Each event is checked against the table
// right before its callback runs (run_io): a descriptor removed or closed earlier in this batch
// carries a newer generation by then, and so does a number that a new socket has taken since.
// Either way the stale event is dropped, and it never reaches an object that is gone or a socket
// it was not about.
// (Stage 04 solved the same problem with a shared Handle object per registration; a number
// and a counter do it without an allocation per wait.) Timers have the same guard: a due timer
// cancelled by an earlier callback of the same turn is skipped, so a response and its timeout
// never both happen.
void EventLoop::run_once() {
    apply_changes();
    int count = epoll_wait(epoll_fd_, events_.data(), static_cast<int>(events_.size()), poll_timeout_ms());
    if (count < 0) {
        if (errno != EINTR) throw std::system_error(errno, std::generic_category(), "epoll_wait");
        count = 0;  // a signal interrupted the wait; timers and the ready queue still get their turn
    }
    for (int i = 0; i < count; ++i) {
        const std::uint32_t events = events_[i].events;
        const int fd = static_cast<int>(events_[i].data.u64 & 0xffffffffu);
        const auto generation = static_cast<std::uint32_t>(events_[i].data.u64 >> 32);
        // An error or a hang-up wakes both sides, whatever they asked for: the callback's own
        // recv(), send() or getsockopt() is how it learns what went wrong.
        if (events & (EPOLLIN | EPOLLERR | EPOLLHUP)) run_io(fd, generation, Direction::read);
        if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) run_io(fd, generation, Direction::write);
    }
    run_due_timers();
    run_ready();
}

// Calls the reader or writer of `fd` if the event is about the registration that is current.
void EventLoop::run_io(int fd, std::uint32_t generation, Direction direction) {
    if (static_cast<std::size_t>(fd) >= watches_.size()) return;
    Watch& watch = watches_[static_cast<std::size_t>(fd)];
    // Stale: removed earlier in this batch, or removed and added again (perhaps for a new socket
    // with the same number). See "The stale-event problem" above.
    if (watch.generation != generation || !watch.wants(direction)) return;

    // Most callbacks remove themselves when their wait is over. Destroying a std::function while it
    // runs would pull the code out from under it, so it runs from a local, and goes back into its
    // slot afterwards unless the callback removed or replaced it meanwhile.
    Callback callback = std::exchange(watch.callback(direction), nullptr);
    run_callback(callback);
    Watch& after = watches_[static_cast<std::size_t>(fd)];  // the table may have grown meanwhile
    if (after.wants(direction) && !after.callback(direction)) after.callback(direction) = std::move(callback);
}

void EventLoop::run_due_timers() {
    const Clock::time_point now = time();
    while (!timers_.empty() && timers_.front()->when <= now) {
        std::pop_heap(timers_.begin(), timers_.end(), later);
        std::shared_ptr<detail::Timer> timer = std::move(timers_.back());
        timers_.pop_back();
        timer->in_heap = false;
        if (timer->cancelled) {
            --cancelled_in_heap_;
            continue;
        }
        Callback callback = std::move(timer->callback);
        timer->callback = nullptr;
        run_callback(callback);
    }
}

void EventLoop::run_ready() {
    // Only what is here now: anything scheduled from here on waits for the next turn.
    for (std::size_t todo = ready_.size(); todo > 0 && !ready_.empty(); --todo) {
        Ready ready = std::move(ready_.front());
        ready_.pop_front();
        if (ready.callback) {
            run_callback(ready.callback);
        } else if (std::shared_ptr<detail::TaskBase> task = ready.task.lock()) {
            // `task` keeps the task alive until its step returns, even if the step drops the last
            // other handle to it. A task destroyed before its turn came is simply skipped.
            task->step();
        }
    }
}

void EventLoop::run_callback(Callback& callback) {
    try {
        callback();
    } catch (const std::exception& error) {
        std::cerr << "Exception in callback: " << error.what() << '\n';
    } catch (const CancelledError&) {
        std::cerr << "Exception in callback: CancelledError\n";
    } catch (...) {
        std::cerr << "Exception in callback: (not a std::exception)\n";
    }
}

// How long epoll_wait may sleep: not at all when something is ready or stop() was called, until
// the nearest deadline when there is a timer, for as long as it takes otherwise.
int EventLoop::poll_timeout_ms() {
    drop_cancelled_timers();
    if (!ready_.empty() || stopping_) return 0;
    if (timers_.empty()) return -1;
    const Duration wait = timers_.front()->when - time();
    if (wait <= Duration::zero()) return 0;
    // Rounded UP to whole milliseconds: rounded down, epoll_wait would return just before the
    // deadline, find no timer due, and poll again with a timeout of 0, spinning until it is.
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(wait).count();
    return static_cast<int>(std::min<decltype(ms)>(ms, INT_MAX));
}

bool EventLoop::has_work() const { return !ready_.empty() || watching_ > 0 || pending_timers() > 0; }

void EventLoop::run_forever() {
    if (running_) throw std::logic_error("run_forever: the loop is already running");
    running_ = true;
    stopping_ = false;
    try {
        for (;;) {
            if (!stopping_ && !has_work()) {
                throw std::logic_error(
                    "event loop: nothing left to wait for (no ready task, no timer, no descriptor): "
                    "every pending task waits on a future that nothing will complete");
            }
            run_once();
            if (stopping_) break;
        }
    } catch (...) {
        running_ = false;
        stopping_ = false;
        throw;
    }
    running_ = false;
    stopping_ = false;
}

// ---- Descriptors ---------------------------------------------------------------------------------

void EventLoop::add_reader(int fd, Callback callback) { add_watch(fd, Direction::read, std::move(callback)); }
void EventLoop::add_writer(int fd, Callback callback) { add_watch(fd, Direction::write, std::move(callback)); }
bool EventLoop::remove_reader(int fd) { return remove_watch(fd, Direction::read); }
bool EventLoop::remove_writer(int fd) { return remove_watch(fd, Direction::write); }

void EventLoop::add_watch(int fd, Direction direction, Callback callback) {
    if (fd < 0) throw std::invalid_argument("add_reader/add_writer: negative descriptor");
    if (!callback) throw std::invalid_argument("add_reader/add_writer: empty callback");
    if (static_cast<std::size_t>(fd) >= watches_.size()) watches_.resize(static_cast<std::size_t>(fd) + 1);
    Watch& watch = watches_[static_cast<std::size_t>(fd)];
    const bool was_watched = watch.wanted();
    const bool was_wanted = watch.wants(direction);
    if (watch.registered == 0) {
        // New to epoll: add it now, so that a refusal reaches the caller. EBADF, EPERM (a regular
        // file), ENOMEM, ENOSPC (the per-user limit on watched descriptors).
        epoll_event event{};
        event.events = watch.interest() | (direction == Direction::read ? EPOLLIN : EPOLLOUT);
        event.data.u64 = pack(fd, watch.generation);
        if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event) < 0) {
            throw std::system_error(errno, std::generic_category(), "epoll_ctl");
        }
        watch.registered = event.events;
    } else {
        note_change(fd);  // epoll has it already: the new interest goes with the next batch
    }
    (direction == Direction::read ? watch.reading : watch.writing) = true;
    watch.callback(direction) = std::move(callback);  // replaces any earlier one
    if (!was_wanted) ++watching_;
    if (!was_watched) ++watched_;
}

bool EventLoop::remove_watch(int fd, Direction direction) {
    if (fd < 0 || static_cast<std::size_t>(fd) >= watches_.size()) return false;
    Watch& watch = watches_[static_cast<std::size_t>(fd)];
    if (!watch.wants(direction)) return false;
    (direction == Direction::read ? watch.reading : watch.writing) = false;
    watch.callback(direction) = nullptr;  // safe even for the running callback: run_io holds it
    --watching_;
    if (!watch.wanted()) {
        --watched_;
        // Nobody wants this number now: an event of this turn for it is for nobody, even if a
        // reader or writer comes back before the turn ends (see run_once).
        ++watch.generation;
        watch.emptied = true;
    }
    note_change(fd);
    return true;
}

void EventLoop::remove_and_close(int fd) {
    if (fd < 0) return;
    if (static_cast<std::size_t>(fd) < watches_.size()) {
        Watch& watch = watches_[static_cast<std::size_t>(fd)];
        watching_ -= (watch.reading ? 1 : 0) + (watch.writing ? 1 : 0);
        if (watch.wanted()) --watched_;
        watch.reading = false;
        watch.writing = false;
        watch.reader = nullptr;  // safe even for the running callback: run_io holds it
        watch.writer = nullptr;
        // close() below takes the socket out of epoll: there is nothing left to tell epoll, and if
        // fd is in changed_, apply_changes finds nothing to do. The next socket with this number
        // starts afresh, with an EPOLL_CTL_ADD and a new generation.
        watch.registered = 0;
        watch.emptied = false;
        ++watch.generation;
    }
    ::close(fd);  // never retried: Linux frees the number even when close() reports an error
}

void EventLoop::note_change(int fd) {
    Watch& watch = watches_[static_cast<std::size_t>(fd)];
    if (watch.changed) return;
    watch.changed = true;
    changed_.push_back(fd);
}

// Tells epoll what each descriptor changed during the last turn now waits for: one epoll_ctl per
// descriptor, however many times its reader and writer came and went (libuv batches its changes
// the same way). A request of this stage, for instance, removes its connect's writer and adds its
// recv's reader in the same turn: one EPOLL_CTL_MOD, where telling epoll at once would take a DEL
// and an ADD. Changes wait for this moment without harm: nothing can happen to a descriptor in
// epoll until the next epoll_wait, and that comes right after.
//
// A descriptor closed with close() instead of remove_and_close() has left epoll already, without
// the loop knowing: then DEL fails (EBADF or ENOENT), which is fine, and MOD fails with ENOENT if
// a new socket took the number, which must then be ADDed.
void EventLoop::apply_changes() {
    int error = 0;
    for (const int fd : changed_) {
        Watch& watch = watches_[static_cast<std::size_t>(fd)];
        watch.changed = false;
        const std::uint32_t wanted = watch.interest();
        const bool emptied = std::exchange(watch.emptied, false);
        // Nothing to tell: never added (or closed), or back as it was with the same generation.
        if (watch.registered == 0 || (wanted == watch.registered && !emptied)) continue;
        if (wanted == 0) {
            epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
            watch.registered = 0;
            continue;
        }
        epoll_event event{};
        event.events = wanted;
        event.data.u64 = pack(fd, watch.generation);  // a new generation if it was emptied
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
    // only if epoll refuses that socket (ENOMEM, ENOSPC): its waits can never end.
    if (error != 0) throw std::system_error(error, std::generic_category(), "epoll_ctl");
}

// ---- Timers and the ready queue --------------------------------------------------------------------

TimerHandle EventLoop::call_at(Clock::time_point when, Callback callback) {
    auto timer = std::make_shared<detail::Timer>(
        detail::Timer{when, next_sequence_++, std::move(callback), this});
    timers_.push_back(timer);
    std::push_heap(timers_.begin(), timers_.end(), later);
    return TimerHandle(std::move(timer));
}

TimerHandle EventLoop::call_later(Duration delay, Callback callback) {
    return call_at(time() + delay, std::move(callback));
}

void EventLoop::call_soon(Callback callback) {
    ready_.push_back(Ready{{}, std::move(callback)});
}

void EventLoop::schedule_step(detail::TaskBase& task) {
    ready_.push_back(Ready{task.weak_from_this(), nullptr});
}

// Keeps cancelled timers from piling up: every request of a run cancels its deadline long before
// it is due. When most of the heap is cancelled, rebuild it without them: O(n) once per O(n)
// cancellations. Then pop any cancelled ones off the top, so the top is a real deadline.
void EventLoop::drop_cancelled_timers() {
    if (timers_.size() >= min_heap_to_compact && cancelled_in_heap_ * 2 > timers_.size()) {
        std::erase_if(timers_, [](const std::shared_ptr<detail::Timer>& timer) {
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

}  // namespace sixways::coroutines
