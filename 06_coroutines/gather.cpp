#include "06_coroutines/gather.hpp"

namespace sixways::coroutines {

Task<void> gather(EventLoop& loop, std::vector<Task<void>> children) {
    const std::exception_ptr failure = co_await detail::wait_for_children(loop, children, true);
    if (failure) std::rethrow_exception(failure);
}

}  // namespace sixways::coroutines
