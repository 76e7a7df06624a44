// crawl [ROOT_URL ...] [--max-tasks 10] [--max-redirect 10] [--max-tries 4] [--max-pages N]
//       [--exclude PATTERN] [--strict|--lenient] [--timeout DURATION] [--resolve HOST:PORT:ADDR]
//       [--json] [--help]
#include "06_coroutines/crawler/cli.hpp"
#include "common/standard_streams.hpp"

int main(int argc, char** argv) {
    sixways::open_standard_streams();  // first: see common/standard_streams.hpp
    return sixways::crawler::run_crawl(argc, argv);
}
