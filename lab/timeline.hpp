// compare --timeline: a stage's --trace file (common/trace.hpp) drawn as an SVG picture for the
// docs, where Perfetto cannot go. One row per lane of the trace, time to the right; each request a
// light bar, its phases coloured on it (connect, send, wait, receive), the phase a failed request
// ended in drawn red; the resolve on its own row at the top; a time axis below.
#pragma once

#include <string>
#include <string_view>

namespace sixways::lab {

// The SVG for a trace file's text. Throws JsonError or std::runtime_error when the text is not a
// trace ("no traceEvents array").
std::string timeline_svg(std::string_view trace_json);

}  // namespace sixways::lab
