// The little SVG that the compare tool's plot and the timeline need: escaped text, numbers written
// the same way everywhere, and round tick values for an axis. SVG is plain text, so a picture is a
// string built up element by element; no library is needed.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace sixways::lab::svg {

// Text for an element's content or a quoted attribute: & < > " escaped.
std::string escape(std::string_view text);

// A coordinate or length with at most two decimals and no trailing zeros: "12.5", "3", "0.07".
std::string number(double value);

// About `count` round values (1, 2 or 5 times a power of ten apart) from `low` to `high`, for the
// ticks of a linear axis. Empty if high <= low.
std::vector<double> linear_ticks(double low, double high, int count);

// A value for an axis label without needless digits: "0.001", "0.5", "10", "2500".
std::string tick_label(double value);

// The opening <svg> element with a white background, and the closing one.
std::string open_document(double width, double height);
std::string close_document();

}  // namespace sixways::lab::svg
