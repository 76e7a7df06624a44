// What the fuzz targets share: reading the fuzzer's bytes, cutting them into pieces, and stopping
// loudly when a property does not hold.
//
// The parsers of a network program are fed whatever recv() returned, so their result must not
// depend on where the pieces were cut. The fuzzer chooses the cuts too: a target reads a few
// control bytes from the front of its input (the piece lengths, and a "stretch" that lets a small
// input grow past the parsers' size limits), and the rest is the data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace sixways::fuzz {

// Stops the run when a property does not hold. libFuzzer saves the input that did it as a crash
// file; the replay test (replay_main.cpp) fails on it. Not assert(): Release builds compile
// assert() away, and the corpus is replayed in Release too.
inline void check(bool holds, const char* property) {
    if (holds) return;
    std::fprintf(stderr, "fuzz property does not hold: %s\n", property);
    std::abort();
}

// The input, read from the front: control bytes first, then the data.
class FuzzInput {
public:
    FuzzInput(const std::uint8_t* data, std::size_t size)
        : rest_(reinterpret_cast<const char*>(data), size) {}

    // The next byte; 0 once the input has run out, so that every input, even an empty one, has a
    // meaning.
    std::uint8_t take_byte() {
        if (rest_.empty()) return 0;
        const auto byte = static_cast<std::uint8_t>(rest_.front());
        rest_.remove_prefix(1);
        return byte;
    }

    // Everything not taken yet.
    std::string_view rest() const { return rest_; }

private:
    std::string_view rest_;
};

// The 8 control bytes at the front of an input, which say how to feed the data that follows:
//   [0]     options: bit 7 stretches the data (below); bits 0-6 are the target's own
//   [1..4]  piece lengths, used in turn: 1,1,1,1 is one byte at a time; 0 feeds an empty piece,
//           which must change nothing; all four 0 feed the data in one piece
//   [5]     stretch: the byte at this position (modulo the size)...
//   [6..7]  ...is repeated this many more times (big-endian, up to 65535)
struct Controls {
    std::uint8_t options = 0;
    std::uint8_t lengths[4] = {};
    std::size_t stretch_at = 0;
    std::size_t stretch_copies = 0;

    bool stretch() const { return (options & 0x80) != 0; }
};

inline Controls take_controls(FuzzInput& input) {
    Controls controls;
    controls.options = input.take_byte();
    for (std::uint8_t& length : controls.lengths) length = input.take_byte();
    controls.stretch_at = input.take_byte();
    const std::size_t high = input.take_byte();
    controls.stretch_copies = high * 256 + input.take_byte();
    return controls;
}

// The data, stretched if the controls say so. libFuzzer's inputs stay small (4 KiB by default),
// but the parsers' limits (a 16 KiB request head, a 64 KiB response head) are where cutting is
// most likely to go wrong, so a small input must be able to reach them.
inline std::string stretched(std::string_view data, const Controls& controls) {
    if (!controls.stretch() || data.empty()) return std::string(data);
    const std::size_t at = controls.stretch_at % data.size();
    std::string out(data.substr(0, at));
    out.append(controls.stretch_copies, data[at]);
    out.append(data.substr(at));
    return out;
}

// `data` cut into pieces with the controls' lengths.
inline std::vector<std::string_view> cut(std::string_view data, const Controls& controls) {
    const auto& lengths = controls.lengths;
    if (lengths[0] == 0 && lengths[1] == 0 && lengths[2] == 0 && lengths[3] == 0) return {data};
    std::vector<std::string_view> pieces;
    for (std::size_t turn = 0; !data.empty(); ++turn) {
        const std::string_view piece = data.substr(0, lengths[turn % 4]);
        pieces.push_back(piece);
        data.remove_prefix(piece.size());
    }
    return pieces;
}

}  // namespace sixways::fuzz
