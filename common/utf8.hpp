// UTF-8, as RFC 3629 defines it. JSON text must be UTF-8 (RFC 8259 section 8.1), and what a server
// sends us (a header, a link on a page) is any bytes at all: the JSON writer and reader check it
// with this.
#pragma once

#include <cstddef>
#include <string_view>

namespace sixways {

// The length (1 to 4) of the well-formed UTF-8 sequence that `text` starts with, or 0 when it does
// not start with one: a stray continuation byte, a byte never used in UTF-8 (0xC0, 0xC1, 0xF5 and
// up), an overlong form, a surrogate (U+D800 to U+DFFF), a code point above U+10FFFF, or a
// sequence cut short. The ranges are those of Table 3-7 of the Unicode Standard.
inline std::size_t utf8_sequence_length(std::string_view text) {
    if (text.empty()) return 0;
    const auto byte = [&text](std::size_t i) { return static_cast<unsigned char>(text[i]); };
    const unsigned char first = byte(0);
    if (first < 0x80) return 1;
    std::size_t length = 0;
    unsigned char second_low = 0x80;   // the second byte's range: narrower after E0, ED, F0, F4
    unsigned char second_high = 0xBF;
    if (first >= 0xC2 && first <= 0xDF) {
        length = 2;
    } else if (first >= 0xE0 && first <= 0xEF) {
        length = 3;
        if (first == 0xE0) second_low = 0xA0;   // below: overlong
        if (first == 0xED) second_high = 0x9F;  // above: surrogates
    } else if (first >= 0xF0 && first <= 0xF4) {
        length = 4;
        if (first == 0xF0) second_low = 0x90;   // below: overlong
        if (first == 0xF4) second_high = 0x8F;  // above: past U+10FFFF
    } else {
        return 0;
    }
    if (text.size() < length || byte(1) < second_low || byte(1) > second_high) return 0;
    for (std::size_t i = 2; i < length; ++i) {
        if (byte(i) < 0x80 || byte(i) > 0xBF) return 0;
    }
    return length;
}

}  // namespace sixways
