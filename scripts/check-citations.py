#!/usr/bin/env python3
"""Checks that every citation of docs/ resolves.

Code comments, scripts and the Markdown pages cite the reference under docs/ by file
and heading: `docs/safety.md#output-files`. This finds every `docs/<file>.md` and
`docs/<file>.md#<anchor>` mention in the repository's sources, scripts and pages, and
every relative Markdown link of a page (`[text](hosts.md#rate-limits)`, `(#errors)`,
`(../bench/RESULTS.md)`), and prints `file:line: ...` for each one whose file or
heading does not exist. A citation of the old specification's sections is refused
too: the repository does not hold that text. Exits 1 if anything is wrong.

Anchors are GitHub's: the heading's text in lower case, punctuation dropped, spaces
turned into '-'; a heading that repeats one in the same page gets '-1', '-2', ….
"""
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

# Where citations may be written.
SCANNED = [
    "Sources", "Tests", "Examples", "scripts", "bench", "docs", "manifests", "Fuzz", ".ci", ".githooks",
    "README.md", "CONTRIBUTING.md", "ARCHITECTURE.md", "Makefile", "Containerfile", "Package.swift",
]
SKIPPED_FOLDERS = {".build", ".swiftpm", "out", "corpus", "corpus-paths", "crashers", "crashers-paths"}
TEXT_SUFFIXES = (
    ".swift", ".py", ".sh", ".md", ".yaml", ".yml", ".cron", ".txt", ".json", ".h", ".c",
    ".modulemap", ".1",
)

# A mention from the repository's root, in any file: docs/manifest.md#item-keys.
MENTION = re.compile(r"(?<![\w./-])docs/([A-Za-z0-9_/-]+\.md)(?:#([A-Za-z0-9_-]*))?")
# A relative Markdown link or image: [text](target) or ![alt](target).
LINK = re.compile(r"\]\(([^)\s]+)\)")
# The old specification's section sign, spelled in two pieces so this file passes.
OLD_CITATION = re.compile("SPEC" + r"\s*" + "\u00a7")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
HTML_ANCHOR = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"")


def slug(heading):
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"`([^`]*)`", r"\1", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path, cache={}):
    """Every anchor of the Markdown page at `path`, or None when it does not exist."""
    if path not in cache:
        if not os.path.isfile(path):
            cache[path] = None
        else:
            found, counts, fenced = set(), {}, False
            with open(path, encoding="utf-8") as page:
                for line in page:
                    if line.lstrip().startswith("```"):
                        fenced = not fenced
                        continue
                    if fenced:
                        continue
                    found.update(HTML_ANCHOR.findall(line))
                    match = HEADING.match(line)
                    if match:
                        base = slug(match.group(2))
                        n = counts.get(base, 0)
                        counts[base] = n + 1
                        found.add(base if n == 0 else f"{base}-{n}")
            cache[path] = found
    return cache[path]


def files():
    for entry in SCANNED:
        path = os.path.join(ROOT, entry)
        if os.path.isfile(path):
            yield path
            continue
        for folder, subfolders, names in os.walk(path):
            subfolders[:] = sorted(s for s in subfolders if s not in SKIPPED_FOLDERS and not s.startswith(".build"))
            for name in sorted(names):
                if name.endswith(TEXT_SUFFIXES) or "." not in name:
                    yield os.path.join(folder, name)


def problem_with(target_file, anchor):
    """Why `target_file#anchor` does not resolve, or None."""
    found = anchors(target_file)
    if found is None:
        return "no such file"
    if anchor and anchor not in found:
        return f"no heading with anchor #{anchor}"
    return None


def check(path):
    problems = []
    relative = os.path.relpath(path, ROOT)
    is_page = path.endswith(".md")
    try:
        with open(path, encoding="utf-8") as source:
            lines = source.read().split("\n")
    except UnicodeDecodeError:
        return problems
    fenced = False
    for number, line in enumerate(lines, 1):
        if OLD_CITATION.search(line):
            problems.append(f"{relative}:{number}: cites the specification's sections; cite docs/<file>.md#<heading>")
        for match in MENTION.finditer(line):
            why = problem_with(os.path.join(ROOT, "docs", match.group(1)), match.group(2))
            if why:
                problems.append(f"{relative}:{number}: {match.group(0)}: {why}")
        if not is_page:
            continue
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if fenced:
            continue
        for match in LINK.finditer(line):
            target = match.group(1)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("<"):
                continue  # http:, https:, mailto: …
            if MENTION.fullmatch(target):
                continue  # checked above, from the root
            file_part, _, anchor = target.partition("#")
            target_file = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
            if file_part.endswith(".md") or not file_part:
                why = problem_with(target_file, anchor)
            else:
                why = None if os.path.exists(target_file) else "no such file"
            if why:
                problems.append(f"{relative}:{number}: ({target}): {why}")
    return problems


def main():
    problems = [problem for path in files() for problem in check(path)]
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f"{len(problems)} citation(s) of docs/ do not resolve", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
