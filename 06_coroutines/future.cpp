// The untyped half of a Future: its status, its exception, and what waits for it.
#include "06_coroutines/future.hpp"

#include "06_coroutines/task.hpp"

namespace sixways::coroutines::detail {

std::exception_ptr FutureState::exception() const {
    if (cancelled()) throw CancelledError();
    if (!done()) throw InvalidStateError("exception(): the future is not done yet");
    return exception_;
}

void FutureState::set_exception(std::exception_ptr error) {
    require_pending("set_exception");
    if (!error) throw std::invalid_argument("set_exception: null exception");
    finish(Status::finished, std::move(error));
}

bool FutureState::cancel() {
    if (done()) return false;
    finish(Status::cancelled);
    return true;
}

CallbackId FutureState::add_done_callback(Callback callback) {
    const CallbackId id = next_callback_id_++;
    if (done()) {
        loop_->call_soon(std::move(callback));  // done already: the next turn, as promised
    } else {
        callbacks_.emplace_back(id, std::move(callback));
    }
    return id;
}

bool FutureState::remove_done_callback(CallbackId id) {
    for (auto it = callbacks_.begin(); it != callbacks_.end(); ++it) {
        if (it->first == id) {
            callbacks_.erase(it);
            return true;
        }
    }
    return false;
}

void FutureState::require_pending(const char* call) const {
    if (done()) throw InvalidStateError(std::string(call) + ": the future is already done");
}

void FutureState::check_result() const {
    if (cancelled()) throw CancelledError();
    if (!done()) throw InvalidStateError("result(): the future is not done yet");
    if (exception_) std::rethrow_exception(exception_);
}

// Everything that waits for this future runs on a later turn, in the order it started waiting:
// first the tasks suspended in co_await on it (each gets its next step scheduled), then the done
// callbacks. Nothing runs here, inside whatever code is finishing the future.
void FutureState::finish(Status status, std::exception_ptr error) {
    status_ = status;
    exception_ = std::move(error);
    TaskBase* waiter = std::exchange(first_waiter_, nullptr);
    last_waiter_ = nullptr;
    while (waiter != nullptr) {
        TaskBase* next = std::exchange(waiter->next_waiter_, nullptr);
        loop_->schedule_step(*waiter);
        waiter = next;
    }
    std::vector<std::pair<CallbackId, Callback>> callbacks = std::move(callbacks_);
    callbacks_.clear();
    for (auto& entry : callbacks) loop_->call_soon(std::move(entry.second));
}

std::string FutureState::details() const {
    switch (status_) {
    case Status::pending:
        return "pending";
    case Status::cancelled:
        return "cancelled";
    case Status::finished:
        break;
    }
    if (!exception_) return "finished";
    try {
        std::rethrow_exception(exception_);
    } catch (const std::exception& error) {
        return std::string("finished exception=") + error.what();
    } catch (...) {
        return "finished exception=(not a std::exception)";
    }
}

void FutureState::add_waiter(TaskBase& task) {
    task.next_waiter_ = nullptr;
    if (last_waiter_ != nullptr) {
        last_waiter_->next_waiter_ = &task;
    } else {
        first_waiter_ = &task;
    }
    last_waiter_ = &task;
}

// Walks only the tasks waiting on this one future, almost always one.
void FutureState::remove_waiter(TaskBase& task) {
    TaskBase* previous = nullptr;
    for (TaskBase* waiter = first_waiter_; waiter != nullptr; previous = waiter, waiter = waiter->next_waiter_) {
        if (waiter != &task) continue;
        (previous != nullptr ? previous->next_waiter_ : first_waiter_) = waiter->next_waiter_;
        if (last_waiter_ == waiter) last_waiter_ = previous;
        waiter->next_waiter_ = nullptr;
        return;
    }
}

}  // namespace sixways::coroutines::detail
