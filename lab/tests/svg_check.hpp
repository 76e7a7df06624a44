// For the tests of the pictures: is an SVG text well-formed XML (every element closed, in order,
// attributes quoted), and how many elements of a kind does it hold?
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace sixways::lab::testing {

// "" when well-formed, else what is wrong and where ("at 120: </g> closes <svg>").
std::string xml_problem(std::string_view text);

// How many start tags `<name ...` there are, optionally only those whose tag contains `with`.
std::size_t count_elements(std::string_view text, std::string_view name, std::string_view with = "");

}  // namespace sixways::lab::testing
