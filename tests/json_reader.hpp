// The JSON reader now lives in common/ (the compare tool reads reports with it too). This header
// keeps the suite's old names, sixways::conformance::Json and parse_json, for stage tests that
// still include it; new code includes "common/json_reader.hpp".
#pragma once

#include "common/json_reader.hpp"

namespace sixways::conformance {

using sixways::Json;
using sixways::JsonError;
using sixways::parse_json;

}  // namespace sixways::conformance
