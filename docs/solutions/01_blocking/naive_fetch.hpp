// Exercise 2 of chapter 01: the four lines of Python, written in C++ as they are.
//
//     sock = socket.socket()
//     sock.connect((host, 80))
//     sock.send(request)
//     response = sock.recv(1024)
//
// Kept naive on purpose, to show what stage 01 adds: no loop around send(), one recv() of at most
// 1024 bytes taken as the whole response, no deadline. Do not copy it into a real program.
#pragma once

#include <string>

#include "common/fetch.hpp"

namespace sixways::exercise01 {

// Connects to the request's first address, sends the GET request with one send(), and returns what
// one recv() of at most 1024 bytes returned: the start of the response, or all of it, by luck.
// Throws std::runtime_error naming the call that failed.
std::string naive_fetch(const Request& request);

}  // namespace sixways::exercise01
