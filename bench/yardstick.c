/* The yardstick: the least a client can do to make N HTTP requests over N connections.
 *
 * One epoll loop, an array of connections indexed by descriptor, no parser (it reads until the server
 * closes), no timers, no callbacks, no allocation per request. It is not a lesson and not a client to
 * copy (it trusts the server to close, and it has no deadline): it is the floor the stages are
 * measured against, the closest this machine gets to what the kernel allows.
 *
 * It is a function, yardstick_run (yardstick.h), so that the benchmarks call it in the same process
 * as the stages, and a program around it (yardstick_main.c):
 *
 *   yardstick N [--url http://ADDR:PORT/PATH] [--concurrency C] [--json]
 *
 * ADDR must be a numeric IPv4 or IPv6 address (no resolver here either).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench/yardstick.h"

struct connection {
    size_t sent; /* request bytes written so far; the request is the same for every connection */
    int open;
};

struct target {
    struct sockaddr_storage address;
    socklen_t length;
    char request[1024];
    size_t request_length;
};

static double now_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int parse_target(const char* url, struct target* target) {
    char host[256];
    unsigned port = 80;
    const char* path = "/";
    const char* rest;
    if (strncmp(url, "http://", 7) != 0) return -1;
    rest = url + 7;
    if (*rest == '[') { /* [IPv6]:port */
        const char* close = strchr(rest, ']');
        if (!close || (size_t)(close - rest - 1) >= sizeof host) return -1;
        memcpy(host, rest + 1, (size_t)(close - rest - 1));
        host[close - rest - 1] = '\0';
        rest = close + 1;
    } else {
        size_t n = strcspn(rest, ":/");
        if (n == 0 || n >= sizeof host) return -1;
        memcpy(host, rest, n);
        host[n] = '\0';
        rest += n;
    }
    if (*rest == ':') {
        char* end;
        unsigned long value = strtoul(rest + 1, &end, 10);
        if (end == rest + 1 || value == 0 || value > 65535) return -1;
        port = (unsigned)value;
        rest = end;
    }
    if (*rest == '/') path = rest;
    else if (*rest != '\0') return -1;
    /* The path goes into the request line as it is, and into the --json report: printable ASCII
     * only (no space, no CR or LF to end the line early, no byte of 0x80 or more), and no '"' or
     * backslash, which a URL never holds unencoded and which would end or escape the report's
     * string. */
    for (const char* c = path; *c != '\0'; ++c) {
        const unsigned char byte = (unsigned char)*c;
        if (byte <= ' ' || byte >= 0x7f || byte == '"' || byte == '\\') return -1;
    }

    memset(&target->address, 0, sizeof target->address);
    struct sockaddr_in* v4 = (struct sockaddr_in*)&target->address;
    struct sockaddr_in6* v6 = (struct sockaddr_in6*)&target->address;
    if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)port);
        target->length = sizeof *v4;
    } else if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)port);
        target->length = sizeof *v6;
    } else {
        return -1;
    }
    int n = snprintf(target->request, sizeof target->request,
                     "GET %s HTTP/1.1\r\nHost: %s%s%s:%u\r\nConnection: close\r\n\r\n", path,
                     v6->sin6_family == AF_INET6 ? "[" : "", host,
                     v6->sin6_family == AF_INET6 ? "]" : "", port);
    if (n < 0 || (size_t)n >= sizeof target->request) return -1;
    target->request_length = (size_t)n;
    return 0;
}

/* Starts one connection; returns its descriptor or -1. */
static int start(int epoll_fd, const struct target* target, struct connection* connections,
                 size_t capacity) {
    int fd = socket(target->address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if ((size_t)fd >= capacity) {
        close(fd);
        return -1;
    }
    if (connect(fd, (const struct sockaddr*)&target->address, target->length) != 0 &&
        errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    struct epoll_event event = {.events = EPOLLOUT | EPOLLIN | EPOLLRDHUP, .data.fd = fd};
    if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &event) != 0) {
        close(fd);
        return -1;
    }
    connections[fd].sent = 0;
    connections[fd].open = 1;
    return fd;
}

int yardstick_run(const char* url, long long requests, long long concurrency,
                  struct yardstick_result* result) {
    struct target target;
    if (requests < 0 || concurrency < 0 || parse_target(url, &target) != 0) return -1;
    if (concurrency == 0 || concurrency > requests) concurrency = requests;

    /* One slot per possible descriptor number. The caller raises the limit; we only read it. */
    struct rlimit limit;
    getrlimit(RLIMIT_NOFILE, &limit);
    size_t capacity = (size_t)limit.rlim_cur;
    struct connection* connections = calloc(capacity, sizeof *connections);
    int epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    if (!connections || epoll_fd < 0) {
        int error = errno;
        free(connections);
        if (epoll_fd >= 0) close(epoll_fd);
        errno = error;
        return -2;
    }

    double began = now_seconds();
    long long started = 0, finished = 0, ok = 0, failed = 0, in_flight = 0;
    unsigned long long bytes = 0;
    static char buffer[65536]; /* static: one call at a time */
    struct epoll_event events[1024];
    while (finished < requests) {
        while (in_flight < concurrency && started < requests) {
            ++started;
            if (start(epoll_fd, &target, connections, capacity) < 0) {
                ++failed;
                ++finished;
            } else {
                ++in_flight;
            }
        }
        if (in_flight == 0) continue;
        int ready = epoll_wait(epoll_fd, events, 1024, -1);
        for (int i = 0; i < ready; ++i) {
            int fd = events[i].data.fd;
            struct connection* c = &connections[fd];
            int done = 0, error = 0;
            if (events[i].events & EPOLLOUT && c->sent < target.request_length) {
                ssize_t n = send(fd, target.request + c->sent, target.request_length - c->sent,
                                 MSG_NOSIGNAL);
                if (n > 0) c->sent += (size_t)n;
                else if (errno != EAGAIN) error = 1;
                if (c->sent == target.request_length) {
                    struct epoll_event event = {.events = EPOLLIN | EPOLLRDHUP, .data.fd = fd};
                    epoll_ctl(epoll_fd, EPOLL_CTL_MOD, fd, &event);
                }
            }
            if (!error && events[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
                for (;;) {
                    ssize_t n = recv(fd, buffer, sizeof buffer, 0);
                    if (n > 0) bytes += (unsigned long long)n;
                    else if (n == 0) { done = 1; break; }
                    else { if (errno != EAGAIN) error = 1; break; }
                }
            }
            if (done || error) {
                close(fd); /* closing also removes it from the epoll set */
                c->open = 0;
                --in_flight;
                ++finished;
                if (done && !error) ++ok; else ++failed;
            }
        }
    }
    result->wall_s = now_seconds() - began;
    result->ok = ok;
    result->failed = failed;
    result->bytes_received = bytes;
    result->concurrency = concurrency;
    free(connections);
    close(epoll_fd);
    return 0;
}
