// Chapter 06, exercise 3: chapter 05's split fetch, written with stage 06's coroutines. Each part
// is a coroutine of its own that hands its value back as the value of `co_await`, and its errors
// as exceptions: no forwarding loop, no out-parameter.
#pragma once

#include <vector>

#include "06_coroutines/event_loop.hpp"
#include "06_coroutines/socket.hpp"
#include "06_coroutines/task.hpp"
#include "common/address.hpp"
#include "common/fetch.hpp"
#include "common/http.hpp"

namespace sixways::solutions {

// A socket connected to the first of `addresses` that accepts, tried in order. Throws the last
// address's SocketError ("connect: Connection refused") when none does, std::invalid_argument when
// the list is empty.
coroutines::Coroutine<coroutines::Socket> connect_to_any(coroutines::EventLoop& loop,
                                                         const std::vector<Address>& addresses);

// The response read from `socket` until the parser says it is complete. Throws std::runtime_error
// with the parser's message for a malformed or cut-short response, SocketError for a failed recv.
coroutines::Coroutine<Response> receive_response(coroutines::EventLoop& loop, const coroutines::Socket& socket,
                                                 const Options& options);

// The three parts in a row. No deadline of its own: put it inside wait_for for one. `request` and
// `options` must outlive the coroutine, as for stage 06's fetch.
coroutines::Coroutine<Response> fetch_split(coroutines::EventLoop& loop, const Request& request,
                                            const Options& options);

}  // namespace sixways::solutions
