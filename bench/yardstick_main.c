/* The yardstick program: the command line around yardstick_run (yardstick.c).
 *
 *   yardstick N [--url http://ADDR:PORT/PATH] [--concurrency C] [--json]
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bench/yardstick.h"

/* Opens /dev/null on each of descriptors 0, 1 and 2 that is closed (`yardstick 10 >&-`). Otherwise
 * the first socket would get number 1, and the report, printed to stdout, would go into a
 * connection. The C twin of common/standard_streams.cpp. */
static void open_standard_streams(void) {
    for (int fd = 0; fd <= 2; ++fd) {
        if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
        int opened = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY); /* the lowest free: fd */
        if (opened == fd) continue;
        if (opened >= 0) close(opened);
        _Exit(EXIT_FAILURE); /* nowhere safe to write the report to */
    }
}

int main(int argc, char** argv) {
    open_standard_streams();
    const char* url = "http://127.0.0.1:8080/";
    long long requests = -1;
    long long concurrency = 0;
    int json = 0;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--url") == 0 && i + 1 < argc) url = argv[++i];
        else if (strcmp(argv[i], "--concurrency") == 0 && i + 1 < argc) concurrency = atoll(argv[++i]);
        else if (strcmp(argv[i], "--json") == 0) json = 1;
        else if (requests < 0 && argv[i][0] >= '0' && argv[i][0] <= '9') requests = atoll(argv[i]);
        else {
            fprintf(stderr, "usage: yardstick N [--url http://ADDR:PORT/PATH] [--concurrency C] [--json]\n");
            return 2;
        }
    }

    /* As many descriptors as the hard limit allows. */
    struct rlimit limit;
    getrlimit(RLIMIT_NOFILE, &limit);
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);

    struct yardstick_result result;
    int status = yardstick_run(url, requests, concurrency, &result);
    if (status == -1) {
        fprintf(stderr,
                "yardstick: need N >= 0 and a URL with a numeric address and a printable ASCII path, "
                "got '%s'\n", url);
        return 2;
    }
    if (status != 0) {
        perror("yardstick");
        return 1;
    }

    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    double cpu = (double)usage.ru_utime.tv_sec + (double)usage.ru_utime.tv_usec / 1e6 +
                 (double)usage.ru_stime.tv_sec + (double)usage.ru_stime.tv_usec / 1e6;
    double rate = result.wall_s > 0 ? (double)requests / result.wall_s : 0;
    if (json)
        printf("{\"stage\":\"yardstick\",\"url\":\"%s\",\"requests\":%lld,\"ok\":%lld,\"failed\":%lld,"
               "\"bytes_received\":%llu,\"wall_s\":%.6f,\"cpu_s\":%.6f,\"max_rss_kb\":%ld,\"concurrency\":%lld}\n",
               url, requests, result.ok, result.failed, result.bytes_received, result.wall_s, cpu,
               usage.ru_maxrss, result.concurrency);
    else
        printf("yardstick: %lld requests to %s in %.3f s (%.0f req/s), %lld ok, %lld failed, "
               "%llu bytes received, cpu %.2f s\n",
               requests, url, result.wall_s, rate, result.ok, result.failed, result.bytes_received, cpu);
    return result.failed ? 1 : 0;
}
