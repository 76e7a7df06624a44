#include "first_answer.hpp"

#include <cstddef>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "06_coroutines/fetch.hpp"
#include "06_coroutines/gather.hpp"
#include "06_coroutines/queue.hpp"

namespace sixways::solutions {

using namespace sixways::coroutines;

Coroutine<Result> first_answer(EventLoop& loop, const Request& first, const Request& second, const Options& options) {
    // Each task's done callback puts the task's index here. Shared, not a local of this frame: a
    // callback scheduled on the loop may run after this frame is gone (if its task was destroyed).
    auto finished = std::make_shared<Queue<std::size_t>>(loop);
    std::vector<Task<Result>> fetches;
    fetches.push_back(loop.create_task(fetch(loop, first, options, 0), "first"));
    fetches.push_back(loop.create_task(fetch(loop, second, options, 1), "second"));
    for (std::size_t index = 0; index < fetches.size(); ++index) {
        auto on_done = [finished, index] { finished->put_nowait(index); };
        fetches[index].add_done_callback(on_done);
    }

    // Take the fetches in the order they finish, until one has a response.
    std::optional<Result> answer;
    bool cancelled = false;
    try {
        for (std::size_t taken = 0; taken < fetches.size(); ++taken) {
            const std::size_t index = co_await finished->get();
            answer = fetches[index].result();  // fetch never fails: every error is in the Result
            if (answer->ok()) break;
        }
    } catch (const CancelledError&) {
        cancelled = true;  // C++ forbids co_await in a catch handler: the waiting is done below
    }

    // Whoever is still running loses: cancel it, and wait until it has finished (its socket closed,
    // its deadline's timer gone). cancel() on a task that is done does nothing.
    for (Task<Result>& task : fetches) task.cancel();
    co_await wait(loop, fetches);
    if (cancelled) throw CancelledError();
    co_return std::move(*answer);
}

}  // namespace sixways::solutions
