// crawl [ROOT_URL ...] [--max-tasks 10] [--max-redirect 10] [--max-tries 4] [--max-pages N]
//       [--exclude REGEX] [--strict|--lenient] [--timeout DURATION] [--resolve HOST:PORT:ADDR]
//       [--json] [--help]
#include "06_coroutines/crawler/cli.hpp"

int main(int argc, char** argv) { return sixways::crawler::run_crawl(argc, argv); }
