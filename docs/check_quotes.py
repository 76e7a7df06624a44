#!/usr/bin/env python3
"""Checks that every code quote in the chapters still matches the repository.

A chapter quotes code with a fenced block whose info string names the file and the line range:

    ```cpp 01_blocking/fetch.cpp:20-45
    ...exactly lines 20 to 45 of that file...
    ```

The block must equal those lines (trailing white space aside). When code moves, this check fails
and names the quote, so the book never shows code that is not in the repository.

    docs/check_quotes.py [--show]    --show prints what the file holds now for each stale quote
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^```\w*\s+(?P<path>[\w./-]+):(?P<first>\d+)-(?P<last>\d+)\s*$")


def quotes(chapter):
    """Yields (line number in the chapter, path, first, last, quoted lines) for each quote."""
    lines = chapter.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        start = i
        i += 1
        body = []
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        yield start + 1, match["path"], int(match["first"]), int(match["last"]), body
        i += 1


def main():
    show = "--show" in sys.argv[1:]
    checked = failed = 0
    for chapter in sorted((ROOT / "docs").rglob("*.md")):
        for where, path, first, last, body in quotes(chapter):
            checked += 1
            name = f"{chapter.relative_to(ROOT)}:{where}"
            source = ROOT / path
            if not source.is_file():
                print(f"{name}: quotes {path}, which does not exist")
                failed += 1
                continue
            text = source.read_text(encoding="utf-8").splitlines()
            if not (1 <= first <= last <= len(text)):
                print(f"{name}: {path} has {len(text)} lines, the quote asks for {first}-{last}")
                failed += 1
                continue
            wanted = [line.rstrip() for line in text[first - 1:last]]
            if [line.rstrip() for line in body] != wanted:
                print(f"{name}: the quote of {path}:{first}-{last} no longer matches the file")
                if show:
                    print("\n".join("    " + line for line in wanted))
                failed += 1
    print(f"{checked - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
