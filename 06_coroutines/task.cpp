// How a task is driven: its steps, its waits, its cancellation and its end. task.hpp explains the
// model (the three states, who owns the frame); this file is the code that keeps it true.
#include "06_coroutines/task.hpp"

#include <iostream>

namespace sixways::coroutines::detail {

void TaskBase::attach(EventLoop& loop, std::string name) {
    if (started()) throw InvalidStateError("create_task: the task was started already");
    future_.loop_ = &loop;
    number_ = ++loop.tasks_created_;
    name_ = std::move(name);
    next_task_ = loop.first_task_;
    if (next_task_ != nullptr) next_task_->previous_task_ = this;
    loop.first_task_ = this;
}

void TaskBase::start(EventLoop& loop, std::string name) {
    attach(loop, std::move(name));
    loop.schedule_step(*this);  // state: scheduled
}

// The awaiting task's step is running, and holds the only handle to this one (its awaiter), so
// this task is alive until the step returns.
void TaskBase::start_now(EventLoop& loop) {
    attach(loop, {});
    step();  // state: waiting or done
}

void TaskBase::unlink_from_loop() {
    EventLoop* loop = future_.loop();
    if (loop == nullptr) return;
    if (previous_task_ != nullptr) {
        previous_task_->next_task_ = next_task_;
    } else if (loop->first_task_ == this) {
        loop->first_task_ = next_task_;
    }
    if (next_task_ != nullptr) next_task_->previous_task_ = previous_task_;
    previous_task_ = nullptr;
    next_task_ = nullptr;
}

// asyncio: Task.__step. On entry the task was scheduled (or is being started by co_await); on
// return it is waiting (suspended on a pending future) or done.
void TaskBase::step() {
    if (!frame_) return;  // finished, or destroyed by its loop, since this step was scheduled
    if (!first_step_done_) {
        first_step_done_ = true;
        if (must_cancel_) {
            // Cancelled before it ever ran: its body never starts (asyncio does the same).
            must_cancel_ = false;
            failure_ = std::make_exception_ptr(CancelledError());
            complete();
            return;
        }
    }
    frame_.resume();  // runs until the next co_await on a pending future, or to the end
    if (frame_.done()) {
        complete();
        return;
    }
    // Waiting now. If cancel() was called while we ran, it could only set the flag; now there is a
    // future to cancel, which wakes us with CancelledError from that co_await.
    if (must_cancel_) pass_cancel_down();
}

// The coroutine reached its final suspension: its locals are gone, its result or exception is
// recorded. Destroy the frame first (its parameters go now), so that by the time anyone sees the
// task done, everything it held is released; then finish the future, which wakes its waiters.
void TaskBase::complete() {
    finished_with_unused_cancel_ = must_cancel_;  // the parent that passed it down takes it back
    must_cancel_ = false;
    unlink_from_loop();
    std::exchange(frame_, nullptr).destroy();
    const std::exception_ptr failure = std::exchange(failure_, nullptr);
    if (!failure) {
        future_.finish(FutureState::Status::finished);
        return;
    }
    try {
        std::rethrow_exception(failure);
    } catch (const CancelledError&) {
        // A CancelledError that escaped the coroutine makes the task cancelled, not failed.
        future_.finish(FutureState::Status::cancelled);
        return;
    } catch (...) {
    }
    future_.finish(FutureState::Status::finished, failure);
}

// In await_suspend: state running -> waiting.
void TaskBase::suspend_on(FutureState& future) {
    if (&future == &future_) throw InvalidStateError("a task cannot await itself");
    waiting_on_ = &future;
    future.add_waiter(*this);
}

// In await_resume, after a suspension: `awaited` finished (it took us off its list when it did)
// and this is our step.
//   - If we had passed a cancel() down to `awaited`, a child task, the child has either thrown it
//     (it ended cancelled, or caught the CancelledError) and it is spent, or finished before it
//     could, and it is ours again.
//   - A cancel() that came after `awaited` had finished found nothing to cancel and set the flag.
//     Honour it now, before the coroutine sees the result, unless that result is a child task's
//     finished work (task.hpp, "Cancellation"): then the flag stays set, and step() cancels our
//     next suspension.
void TaskBase::resume_from_wait(FutureState& awaited) {
    waiting_on_ = nullptr;
    TaskBase* child = awaited.task();
    if (std::exchange(cancel_passed_down_, false) && !child->finished_with_unused_cancel_) must_cancel_ = false;
    const bool keep_result = child != nullptr && awaited.succeeded();
    if (must_cancel_ && !keep_result) {
        must_cancel_ = false;
        throw CancelledError();
    }
}

// asyncio: Task.cancel.
bool TaskBase::cancel_task() {
    if (future_.done()) return false;
    if (!pass_cancel_down()) must_cancel_ = true;  // scheduled or running: see task.hpp
    return true;
}

// Hands a cancel to the future we wait on, if there is one and it is not done. A plain future is
// cancelled there and then, and our co_await will throw: the cancel is spent. A child task only
// takes the request, and may finish without throwing it; so we keep it too, until we see what
// became of it (resume_from_wait).
bool TaskBase::pass_cancel_down() {
    if (waiting_on_ == nullptr || !waiting_on_->cancel()) return false;
    cancel_passed_down_ = waiting_on_->task() != nullptr;
    must_cancel_ = cancel_passed_down_;
    return true;
}

// "<Task pending name=Task-3 wait_for=<Future pending>>": the whole chain of awaits, when a task
// waits on a task that waits on a future.
std::string TaskBase::name() const {
    if (!name_.empty()) return name_;
    return number_ == 0 ? "(not started)" : "Task-" + std::to_string(number_);
}

std::string TaskBase::describe() const {
    std::string text = "<Task " + future_.details() + " name=" + name();
    if (waiting_on_ != nullptr) text += " wait_for=" + waiting_on_->to_string();
    return text + ">";
}

void TaskBase::release_frame() {
    if (!frame_) return;
    if (started() && !future_.done()) {
        // asyncio prints the same words when the garbage collector finds a pending task. Here it
        // means the last handle to the task went (or its loop was destroyed) while the task still
        // had work to do. Its frame is destroyed all the same: the destructors of its locals run.
        std::cerr << "Task was destroyed but it is pending!\n    " << describe() << '\n';
    }
    if (waiting_on_ != nullptr) {
        waiting_on_->remove_waiter(*this);
        waiting_on_ = nullptr;
    }
    unlink_from_loop();
    std::exchange(frame_, nullptr).destroy();
}

// The loop is being destroyed with this task pending. The task stays pending, but without a
// frame; its handles must not be used once the loop is gone.
void TaskBase::abandon() {
    const std::shared_ptr<TaskBase> keep_alive = shared_from_this();  // while its frame is destroyed
    release_frame();
}

}  // namespace sixways::coroutines::detail
