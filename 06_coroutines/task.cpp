// How a task is driven: its steps, its waits, its cancellation and its end. task.hpp explains the
// model; this file is the code that keeps it true.
#include "06_coroutines/task.hpp"

#include <exception>
#include <iostream>

#include "common/explain.hpp"

namespace sixways::coroutines {

TaskBase::TaskBase(detail::FutureBase& future, std::coroutine_handle<> body, detail::PromiseBase& body_promise,
                   std::string name)
    : future_(future), body_promise_(&body_promise), name_(std::move(name)) {
    body_promise.task_ = this;
    frames_.reserve(5);  // fetch, wait_for, exchange, receive_response, sock_recv: one allocation
    frames_.push_back({body, &body_promise});
}

// Queues the first step, and joins the loop's list of tasks not done (so that ~EventLoop can
// destroy them). The step's Handle is made once and queued each time the task is woken.
void TaskBase::start(EventLoop& loop) {
    step_ = std::make_shared<Handle>([this] { step(); }, false);
    number_ = ++loop.tasks_made_;
    wake();
    next_task_ = loop.first_task_;
    if (next_task_ != nullptr) next_task_->previous_task_ = this;
    loop.first_task_ = this;
}

void TaskBase::wake() {
    waiting_on_ = nullptr;
    explain::wakes(name_, number_, started_ && !frames_.empty() ? frames_.back().promise->name : nullptr, must_cancel_);
    EventLoop& loop = future_.loop();
    if (!loop.closed_) loop.ready_.push_back(step_);
}

void TaskBase::unlink_from_loop() {
    EventLoop& loop = future_.loop();
    (previous_task_ != nullptr ? previous_task_->next_task_ : loop.first_task_) = next_task_;
    if (next_task_ != nullptr) next_task_->previous_task_ = previous_task_;
    previous_task_ = next_task_ = nullptr;
}

// asyncio: Task.__step. On entry the task is scheduled: its first step, or the future it waited on
// is done. On return it is waiting or done.
void TaskBase::step() {
    if (body_promise_ == nullptr) return;  // finished since the step was queued
    // The step may drop the last handle to this task (its frame held it): keep it alive until the
    // step returns.
    const std::shared_ptr<TaskBase> keep_alive = shared_from_this();
    if (must_cancel_ && !started_) {
        complete();  // cancelled before it ever ran: its body never starts
        return;
    }
    started_ = true;
    EventLoop& loop = future_.loop();
    loop.current_task_ = this;
    explain::step(name_, number_, frames_.back().promise->name);
    while (!frames_.empty()) {
        const std::coroutine_handle<> top = frames_.back().handle;
        top.resume();  // runs until its next co_await that suspends, or to its end
        if (top.done()) {
            explain::finishes(frames_.back().promise->error() != nullptr);
            frames_.pop_back();  // its parent, on top now, takes the result in await_resume
            explain::returns(frames_.empty() ? nullptr : frames_.back().promise->name);
        } else if (waiting_on_ != nullptr) {
            explain::suspends(frames_.back().promise->name);
            break;  // waits on a future, which schedules our next step when it is done
        } else {
            // The only other way a frame suspends (task.hpp): it pushed the coroutine it awaits,
            // which is on top now, and the loop resumes that next.
        }
    }
    loop.current_task_ = nullptr;
    if (frames_.empty()) complete();
}

// The bottom frame has finished. Destroy it first, so that by the time anyone sees the task done,
// everything it held is released; then finish the future, which wakes whoever waits for it.
void TaskBase::complete() {
    unlink_from_loop();
    frames_.clear();
    std::exception_ptr error = body_promise_->error();
    bool cancelled = std::exchange(must_cancel_, false);  // asyncio: a cancel that came too late
    if (error) {
        try {
            std::rethrow_exception(error);
        } catch (const CancelledError&) {
            cancelled = true;  // a CancelledError that escaped makes the task cancelled, not failed
        } catch (...) {
        }
    }
    body_promise_ = nullptr;
    free_body(!cancelled && !error);
    if (cancelled) {
        future_.finish(detail::FutureBase::Status::cancelled);
    } else {
        future_.finish(detail::FutureBase::Status::finished, error);
    }
}

// co_await on a coroutine (CoroutineAwaiter): the child goes on top, and the step resumes it next.
void TaskBase::push(std::coroutine_handle<> child, const detail::PromiseBase& promise) {
    explain::awaits(frames_.back().promise->name, promise.name);
    frames_.push_back({child, &promise});
}

bool TaskBase::wait_on(detail::FutureBase& future) {
    if (&future == &future_) throw InvalidStateError("a task cannot await itself");
    if (must_cancel_) return false;  // cancelled while it ran: woken at once, and the co_await throws
    waiting_on_ = &future;
    future.add_waiter(*this);
    return true;
}

void TaskBase::throw_if_cancelled() {
    if (std::exchange(must_cancel_, false)) throw CancelledError();
}

// The one rule (task.hpp): mark the task, wake it, and cancel what it awaited. waiting_on_ is
// cleared (by wake) before that future is cancelled, so in an await cycle (A awaits B, B awaits A)
// the cancel goes once round and stops.
bool TaskBase::cancel() {
    if (future_.done()) return false;
    ++cancel_requests_;
    must_cancel_ = true;
    if (detail::FutureBase* awaited = waiting_on_) {
        awaited->remove_waiter(*this);
        wake();
        awaited->cancel();
    }
    return true;
}

int TaskBase::uncancel() {
    if (cancel_requests_ > 0 && --cancel_requests_ == 0) must_cancel_ = false;
    return cancel_requests_;
}

// The chain of what waits on what, down to a plain future; an await cycle is shown once round.
std::string TaskBase::describe() const {
    std::string text = "<Task " + future_.state_name() + " name=" + name();
    if (waiting_on_ != nullptr && !describing_) {
        describing_ = true;
        text += " wait_for=" + waiting_on_->to_string();
        describing_ = false;
    }
    return text + ">";
}

void TaskBase::release() {
    if (body_promise_ == nullptr) return;
    // asyncio prints the same words when the garbage collector finds a pending task. Here it means
    // the last handle went (or the loop was destroyed) while the task had work left to do. While
    // an exception unwinds (a CancelledError out of a crawl, or memory running out in fetch_all)
    // every task in the vector that held them goes at once: the loop says so once, in its
    // destructor, not once per task.
    if (std::uncaught_exceptions() > 0) {
        ++future_.loop().tasks_lost_in_unwinding_;
    } else {
        std::cerr << "Task was destroyed but it is pending!\n    " << describe() << '\n';
    }
    if (waiting_on_ != nullptr) waiting_on_->remove_waiter(*this);
    waiting_on_ = nullptr;
    unlink_from_loop();
    frames_.clear();
    body_promise_ = nullptr;
    free_body(false);  // destroys the frames, each with the child it awaits
}

// The loop is being destroyed with this task pending: free its frames while the loop still exists.
void TaskBase::abandon() {
    const std::shared_ptr<TaskBase> keep_alive = shared_from_this();
    release();
}

}  // namespace sixways::coroutines
