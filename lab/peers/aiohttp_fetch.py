#!/usr/bin/env python3
"""The last step of the story the stages retell, in the language it was first told in: Python's
asyncio with the aiohttp client. N requests to one URL, all at once (or at most C at a time), each
with its own timeout, and the same JSON report as the stages, so the compare tool can put it in the
table beside them.

    aiohttp_fetch.py N [--url URL] [--concurrency C] [--timeout SECONDS] [--json]

Needs aiohttp (Debian: apt-get install python3-aiohttp, for /usr/bin/python3).
"""
import argparse
import asyncio
import json
import resource
import sys
import time

import aiohttp


def nearest_rank(sorted_values, percent):
    """The smallest value that at least `percent` % of the values are <= (as common/report.cpp)."""
    rank = max(1, -(-percent * len(sorted_values) // 100))  # ceil without floats
    return sorted_values[rank - 1]


def error_kind(error):
    """The stages' error kinds, as near as aiohttp's exceptions allow."""
    if isinstance(error, asyncio.TimeoutError):
        return "timeout"
    if isinstance(error, aiohttp.ClientConnectorError):
        return "limit" if getattr(error, "errno", None) in (23, 24, 99, 105) else "connect"
    if isinstance(error, (aiohttp.ServerDisconnectedError, aiohttp.ClientPayloadError,
                          aiohttp.ClientOSError)):
        return "receive"
    if isinstance(error, aiohttp.ClientResponseError):
        return "protocol"
    return "receive"


class InFlight:
    """Counts the requests in flight, and the most there ever were (the report's "concurrency")."""

    def __init__(self):
        self.now = 0
        self.most = 0

    def __enter__(self):
        self.now += 1
        self.most = max(self.most, self.now)

    def __exit__(self, *exception):
        self.now -= 1


async def fetch(session, url, semaphore, timeout, in_flight):
    """One request: (ok, body bytes, latency in ms from the start of its connect, error kind)."""
    async with semaphore:  # waiting for a slot does not count, as in the stages
        started = time.monotonic()
        with in_flight:
            try:
                async with session.get(url, timeout=timeout, allow_redirects=False) as response:
                    body = await response.read()
                return True, len(body), (time.monotonic() - started) * 1000, None
            except Exception as error:  # every failure is a result, never a crash
                return False, 0, None, error_kind(error)


async def fetch_all(n, url, concurrency, timeout_s, in_flight):
    # force_close: a new connection per request, as the stages make; limit=0: no pool limit of
    # aiohttp's own (its default is 100), so the semaphore alone decides how many are in flight.
    connector = aiohttp.TCPConnector(limit=0, force_close=True)
    semaphore = asyncio.Semaphore(concurrency or max(n, 1))
    timeout = aiohttp.ClientTimeout(total=timeout_s)
    async with aiohttp.ClientSession(connector=connector) as session:
        return await asyncio.gather(
            *(fetch(session, url, semaphore, timeout, in_flight) for _ in range(n)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", type=int, nargs="?", default=10)
    parser.add_argument("--url", default="http://127.0.0.1:8080/")
    parser.add_argument("--concurrency", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=10.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.n < 0 or args.concurrency < 0 or args.timeout <= 0:
        parser.error("N and C must be >= 0 and the timeout > 0")

    # As many descriptors as the hard limit allows, as the stages do (common/limits.cpp).
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    in_flight = InFlight()
    started = time.monotonic()
    results = asyncio.run(fetch_all(args.n, args.url, args.concurrency, args.timeout, in_flight))
    wall_s = time.monotonic() - started

    usage = resource.getrusage(resource.RUSAGE_SELF)
    latencies = sorted(latency for ok, _, latency, _ in results if ok)
    errors = {}
    for ok, _, _, kind in results:
        if not ok:
            errors[kind] = errors.get(kind, 0) + 1
    report = {
        "stage": "aiohttp",
        "url": args.url,
        "requests": args.n,
        "ok": len(latencies),
        "failed": args.n - len(latencies),
        "bytes": sum(size for ok, size, _, _ in results if ok),
        "wall_s": round(wall_s, 6),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 6),
        "max_rss_kb": usage.ru_maxrss,
        "concurrency": in_flight.most,
        "latency_ms": {
            "p50": round(nearest_rank(latencies, 50), 3) if latencies else None,
            "p99": round(nearest_rank(latencies, 99), 3) if latencies else None,
            "max": round(latencies[-1], 3) if latencies else None,
        },
        "errors": dict(sorted(errors.items())),
    }
    if args.json:
        print(json.dumps(report, separators=(",", ":")))
    else:
        latency = ("latency p50 %.0f ms p99 %.0f ms max %.0f ms"
                   % (report["latency_ms"]["p50"], report["latency_ms"]["p99"],
                      report["latency_ms"]["max"]) if latencies else "latency -")
        print("aiohttp: %d requests to %s in %.3f s (%.0f req/s), %d ok, %d failed, %d bytes, "
              "cpu %.2f s, %s" % (args.n, args.url, wall_s, args.n / wall_s if wall_s > 0 else 0,
                                  report["ok"], report["failed"], report["bytes"],
                                  report["cpu_s"], latency))
    return 0 if report["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
