// The untyped half of a Future: its status, its exception, and what waits for it.
#include "06_coroutines/future.hpp"

#include "06_coroutines/task.hpp"

namespace sixways::coroutines::detail {

std::exception_ptr FutureBase::exception() const {
    if (cancelled()) throw CancelledError();
    if (!done()) throw InvalidStateError("exception(): the future is not done yet");
    return exception_;
}

void FutureBase::set_exception(std::exception_ptr error) {
    require_settable("set_exception");
    if (!error) throw std::invalid_argument("set_exception: null exception");
    finish(Status::finished, std::move(error));
}

bool FutureBase::cancel() {
    if (done()) return false;
    finish(Status::cancelled);
    return true;
}

void FutureBase::add_done_callback(Callback callback) {
    if (done()) {
        loop_.call_soon(std::move(callback));  // done already: the next turn, as promised
    } else {
        callbacks_.push_back(std::move(callback));
    }
}

void FutureBase::require_settable(const char* call) const {
    if (is_task_) throw InvalidStateError(std::string(call) + ": a task's result is what its coroutine returns");
    if (done()) throw InvalidStateError(std::string(call) + ": the future is already done");
}

void FutureBase::check_result() const {
    if (cancelled()) throw CancelledError();
    if (!done()) throw InvalidStateError("result(): the future is not done yet");
    if (exception_) std::rethrow_exception(exception_);
}

// Nothing runs here, inside whatever code is finishing the future: the waiting tasks' steps and
// the callbacks go to the ready queue, in the order they started waiting.
void FutureBase::finish(Status status, std::exception_ptr error) {
    status_ = status;
    exception_ = std::move(error);
    for (TaskBase* waiter = std::exchange(first_waiter_, nullptr); waiter != nullptr;) {
        TaskBase* next = std::exchange(waiter->next_waiter_, nullptr);
        waiter->wake();
        waiter = next;
    }
    last_waiter_ = nullptr;
    for (Callback& callback : std::exchange(callbacks_, {})) loop_.call_soon(std::move(callback));
}

void FutureBase::add_waiter(TaskBase& task) {
    task.next_waiter_ = nullptr;
    (last_waiter_ != nullptr ? last_waiter_->next_waiter_ : first_waiter_) = &task;
    last_waiter_ = &task;
}

// Walks only the tasks waiting on this one future: almost always one.
void FutureBase::remove_waiter(TaskBase& task) {
    TaskBase* previous = nullptr;
    for (TaskBase* waiter = first_waiter_; waiter != nullptr; previous = waiter, waiter = waiter->next_waiter_) {
        if (waiter != &task) continue;
        (previous != nullptr ? previous->next_waiter_ : first_waiter_) = waiter->next_waiter_;
        if (last_waiter_ == waiter) last_waiter_ = previous;
        waiter->next_waiter_ = nullptr;
        return;
    }
}

std::string FutureBase::state_name() const {
    if (status_ == Status::pending) return "pending";
    if (status_ == Status::cancelled) return "cancelled";
    if (!exception_) return "finished";
    try {
        std::rethrow_exception(exception_);
    } catch (const std::exception& error) {
        return std::string("finished exception=") + error.what();
    } catch (...) {
        return "finished exception=(not a std::exception)";
    }
}

std::string FutureBase::to_string() const { return "<Future " + state_name() + ">"; }

}  // namespace sixways::coroutines::detail
