#include "split_fetch.hpp"

#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

namespace sixways::solutions {

using namespace sixways::coroutines;

// exchange()'s connect loop (06_coroutines/fetch.cpp), moved into a coroutine of its own. The
// socket comes back as the value of the co_await: stage 05's generators had to pass it through an
// out-parameter.
Coroutine<Socket> connect_to_any(EventLoop& loop, const std::vector<Address>& addresses) {
    if (addresses.empty()) throw std::invalid_argument("connect_to_any: no address to connect to");
    std::optional<SocketError> last_error;
    for (const Address& address : addresses) {
        try {
            Socket attempt = Socket::open(loop, address.family());
            co_await sock_connect(loop, attempt.fd(), address);
            co_return std::move(attempt);
        } catch (const SocketError& error) {
            last_error = error;  // e.g. ECONNREFUSED: try the next address
        }
    }
    throw *last_error;
}

// exchange()'s receive loop, moved the same way; the Response is its value.
Coroutine<Response> receive_response(EventLoop& loop, const Socket& socket, const Options& options) {
    co_await wait_readable(loop, socket.fd());  // the server has only just got the request
    ResponseParser parser(options.body_cap, options.keep_headers);
    for (;;) {
        const std::string data = co_await sock_recv(loop, socket.fd(), 64 * 1024);
        if (data.empty()) {  // the server closed the connection
            if (parser.finish() == ResponseParser::Status::complete) break;
            throw std::runtime_error(parser.error());
        }
        const ResponseParser::Status status = parser.feed(data);
        if (status == ResponseParser::Status::complete) break;
        if (status == ResponseParser::Status::error) throw std::runtime_error(parser.error());
    }
    co_return parser.take_response();
}

// Chapter 05's three lines. Each co_await runs its coroutine inside this task, like a function
// call; a wait anywhere inside suspends the whole task, and a cancel (wait_for's deadline, say)
// arrives at that wait and unwinds every frame above it, closing the socket on the way.
Coroutine<Response> fetch_split(EventLoop& loop, const Request& request, const Options& options) {
    Socket socket = co_await connect_to_any(loop, request.addresses);
    co_await sock_sendall(loop, socket.fd(), build_get_request(request.url));
    co_return co_await receive_response(loop, socket, options);
}

}  // namespace sixways::solutions
