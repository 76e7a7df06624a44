// 01_blocking [N] [--url URL] [--timeout DURATION] [--json] [--trace FILE]: one request after another.
#include "01_blocking/fetch.hpp"
#include "common/cli.hpp"

int main(int argc, char** argv) {
    const sixways::StageInfo stage{
        .name = "01_blocking",
        .summary = "blocking sockets, one request after another",
        .fetch_all = &sixways::blocking::fetch_all,
        .one_at_a_time = true,
        .flags = {},
    };
    return sixways::run_stage(argc, argv, stage);
}
