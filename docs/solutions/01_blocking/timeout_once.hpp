// Exercise 4 of chapter 01: stage 01 with its receive timeout set once per request (see
// timeout_once.cpp). The same call as sixways::blocking::fetch_all.
#pragma once

#include <vector>

#include "common/fetch.hpp"

namespace sixways::exercise01::timeout_once {

std::vector<Result> fetch_all(const std::vector<Request>& requests, const Options& options);

}  // namespace sixways::exercise01::timeout_once
