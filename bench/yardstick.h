/* The yardstick as a function: the same code the yardstick program runs, callable in-process. */
#ifndef SIXWAYS_BENCH_YARDSTICK_H
#define SIXWAYS_BENCH_YARDSTICK_H

#ifdef __cplusplus
extern "C" {
#endif

struct yardstick_result {
    long long ok;                        /* the server closed after sending */
    long long failed;                    /* could not connect, or an error on the socket */
    unsigned long long bytes_received;   /* everything read: headers and bodies */
    double wall_s;
    long long concurrency;               /* the limit in force: min(requests, concurrency or all) */
};

/* Makes `requests` GET requests to `url` (http://ADDR:PORT/PATH, ADDR numeric, PATH printable
 * ASCII without '"' or a backslash: percent-encode anything else), at most
 * `concurrency` at once (0: all at once), each on a connection of its own. It uses one slot per
 * descriptor number up to the current RLIMIT_NOFILE soft limit; raising it is the caller's job.
 * Returns 0 and fills `result`; -1 for a bad URL or arguments; -2 with errno set when there was no
 * memory or no epoll instance to be had. Not reentrant: one call at a time. */
int yardstick_run(const char* url, long long requests, long long concurrency,
                  struct yardstick_result* result);

#ifdef __cplusplus
}
#endif

#endif
