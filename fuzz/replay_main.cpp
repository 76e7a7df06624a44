// Replays a fuzz target's corpus without libFuzzer: the target's LLVMFuzzerTestOneInput is called
// once for every file in the folders (and for every file) named on the command line.
//
// This is how the corpus runs as an ordinary test under g++ (which has no libFuzzer), in the
// Release and the sanitizer builds: an input that once crashed a parser, kept in the corpus,
// keeps failing the test if the bug comes back. A target that finds a property broken aborts
// (fuzz_input.hpp), and so does this program; the file it was reading is printed first.
//
//   build/bin/http_response_replay fuzz/corpus/http_response
//   build/bin/http_response_replay crash-1234abcd     (an input libFuzzer saved)
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

std::string read_file(const std::filesystem::path& path) {
    std::ifstream file(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s CORPUS_FOLDER_OR_FILE...\n", argv[0]);
        return 2;
    }
    std::vector<std::filesystem::path> files;
    for (int i = 1; i < argc; ++i) {
        const std::filesystem::path path = argv[i];
        if (std::filesystem::is_directory(path)) {
            for (const auto& entry : std::filesystem::directory_iterator(path)) {
                if (entry.is_regular_file()) files.push_back(entry.path());
            }
        } else if (std::filesystem::is_regular_file(path)) {
            files.push_back(path);
        } else {
            std::fprintf(stderr, "%s: no such file or folder\n", path.c_str());
            return 2;
        }
    }
    // A corpus that went missing must not pass as "nothing failed".
    if (files.empty()) {
        std::fprintf(stderr, "no input files\n");
        return 2;
    }
    std::sort(files.begin(), files.end());  // the same order every run

    for (const std::filesystem::path& path : files) {
        std::fprintf(stderr, "%s\n", path.c_str());  // the last name printed is the one that failed
        const std::string bytes = read_file(path);
        LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
    }
    std::printf("%zu inputs replayed\n", files.size());
    return 0;
}
