// The main of every benchmark binary: Google Benchmark's BENCHMARK_MAIN, with the descriptor limit
// raised first (a benchmark with 1000 requests in flight and the lab server in the same process
// holds 2000 sockets, and the default soft limit is often 1024).
#include <benchmark/benchmark.h>

#include "common/limits.hpp"
#include "common/standard_streams.hpp"

int main(int argc, char** argv) {
    sixways::open_standard_streams();  // first: see common/standard_streams.hpp
    sixways::raise_open_file_limit();
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
