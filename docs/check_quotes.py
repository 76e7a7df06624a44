#!/usr/bin/env python3
"""Checks that every code quote in the docs still matches the repository, and every link resolves.

A chapter quotes code with a fenced block whose info string names the file and the line range
(indented, inside a list item, as deep as the item's text):

    ```cpp 01_blocking/fetch.cpp:20-45
    ...exactly lines 20 to 45 of that file...
    ```

The block must equal those lines (trailing white space aside), or, for a file of the stages that
narrate (04 to 06), those lines without the hooks of --explain: a line that is one `explain::...;`
statement may be left out, and the chapters do leave them out (they say so once), but the range
begins and ends on lines the quote shows. When code moves, this check fails and names the quote,
so the book never shows code that is not in the repository.

Every link in docs/ (and in the README files that lead into it) must name a file or folder that
exists, and an anchor (`page.md#a-heading`) a heading of that page. Links to other sites are not
fetched.

    docs/check_quotes.py [--show] [--fix]
        --show  prints what the file holds now for each stale quote
        --fix   moves a stale quote's line range to where its lines now are, when they are in the
                file once, unchanged (after an edit above them); any other stale quote is left alone
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^(?P<indent> *)```\w*\s+(?P<path>[\w./-]+):(?P<first>\d+)-(?P<last>\d+)\s*$")
HOOK = re.compile(r"^\s*explain::\w+\(.*\);\s*(//.*)?$")  # one narration statement, for --explain


NARRATING = ("04_callbacks/", "05_generators/", "06_coroutines/")  # the stages with the hooks


def without_hooks(lines):
    return [line for line in lines if not HOOK.match(line)]


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
        indent = match["indent"]  # a quote inside a list item is indented with the item's text
        while i < len(lines) and not lines[i].startswith(indent + "```"):
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i].lstrip())
            i += 1
        yield start + 1, match["path"], int(match["first"]), int(match["last"]), body
        i += 1


def moved_to(text, body, hooks=True):
    """The 1-based (first, last) lines where body now stands in text, if it stands there exactly
    once, with or without the narration hooks between its lines."""
    wanted = [line.rstrip() for line in body]
    if not wanted:
        return None
    found = [(i + 1, i + len(wanted)) for i in range(len(text) - len(wanted) + 1)
             if [line.rstrip() for line in text[i:i + len(wanted)]] == wanted]
    kept = [i for i, line in enumerate(text) if not (hooks and HOOK.match(line))]  # lines kept
    found += [(kept[k] + 1, kept[k + len(wanted) - 1] + 1) for k in range(len(kept) - len(wanted) + 1)
              if [text[i].rstrip() for i in kept[k:k + len(wanted)]] == wanted
              and (kept[k] + 1, kept[k + len(wanted) - 1] + 1) not in found]
    return found[0] if len(found) == 1 else None


LINK = re.compile(r"!?\[(?:[^\]`]|`[^`]*`)*\]\((?P<target>[^)\s]*)(?:\s+\"[^\"]*\")?\)")
HTML_LINK = re.compile(r"""<(?:img|a)\s[^>]*?(?:src|href)=["'](?P<target>[^"']+)["']""")


def outside_code(lines):
    """Yields (line number, line) for the lines of a Markdown page that are not in fenced code."""
    fenced = False
    for number, line in enumerate(lines, 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


def anchors(page):
    """The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as
    hyphens, a repeated heading numbered -1, -2, ..."""
    seen = {}
    result = set()
    for _, line in outside_code(page.read_text(encoding="utf-8").splitlines()):
        match = re.match(r"^#{1,6}\s+(.*?)\s*$", line)
        if not match:
            continue
        base = re.sub(r"[^\w\- ]", "", match[1].lower()).replace(" ", "-")
        count = seen.get(base, 0)
        seen[base] = count + 1
        result.add(base if count == 0 else f"{base}-{count}")
    return result


def broken_links(page):
    """Yields (line number, target, why) for each link of a page that does not resolve. Fenced code
    and inline code are left out; a link may wrap over lines, as prose does."""
    prose = [""] * len(page.read_text(encoding="utf-8").splitlines())
    for number, line in outside_code(page.read_text(encoding="utf-8").splitlines()):
        prose[number - 1] = line
    text = re.sub(r"`[^`\n]*`", "``", "\n".join(prose))
    for match in [*LINK.finditer(text), *HTML_LINK.finditer(text)]:
        number = text.count("\n", 0, match.start()) + 1
        target = match["target"]
        if re.match(r"^[a-z]+:", target):
            continue  # another site, or mailto:
        path, _, anchor = target.partition("#")
        where = (page.parent / path).resolve() if path else page
        if not where.exists():
            yield number, target, "no such file"
        elif anchor and where.suffix == ".md" and anchor not in anchors(where):
            yield number, target, "no such heading"
        elif not target:
            yield number, target, "empty link"


def main():
    show = "--show" in sys.argv[1:]
    fix = "--fix" in sys.argv[1:]
    checked = failed = fixed = 0
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
            quoted = [line.rstrip() for line in body]
            hooks = path.startswith(NARRATING)
            if hooks and quoted != wanted and quoted == without_hooks(wanted) and (
                    HOOK.match(wanted[0]) or HOOK.match(wanted[-1])):
                print(f"{name}: the quote of {path}:{first}-{last} begins or ends on a narration line "
                      "it leaves out: a reader opening the file at that line sees another line")
                failed += 1
                continue
            if quoted != wanted and not (hooks and quoted == without_hooks(wanted)):
                now = moved_to(text, body, hooks) if fix else None
                if now is not None:
                    fix_range(chapter, where, path, first, last, *now)
                    fixed += 1
                    continue
                print(f"{name}: the quote of {path}:{first}-{last} no longer matches the file")
                if show:
                    print("\n".join("    " + line for line in wanted))
                failed += 1
    if fixed:
        print(f"{fixed} quotes moved to where their lines now are")
    print(f"{checked - failed - fixed} quotes passed, {failed} failed")

    pages = sorted((ROOT / "docs").rglob("*.md")) + sorted(ROOT.glob("*.md")) + sorted(ROOT.glob("*/README.md"))
    links = 0
    for page in pages:
        for number, target, why in broken_links(page):
            print(f"{page.relative_to(ROOT)}:{number}: link to {target!r}: {why}")
            links += 1
    print(f"links in {len(pages)} pages: {links} broken")
    return 1 if failed or links else 0


def fix_range(chapter, where, path, first, last, new_first, new_last):
    """Rewrites the info string of the quote at line `where` of chapter to the new range."""
    lines = chapter.read_text(encoding="utf-8").split("\n")
    old = f"{path}:{first}-{last}"
    assert old in lines[where - 1]
    lines[where - 1] = lines[where - 1].replace(old, f"{path}:{new_first}-{new_last}")
    chapter.write_text("\n".join(lines), encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
