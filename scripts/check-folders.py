#!/usr/bin/env python3
"""Checks that the library's folders depend on each other one way only.

Each folder of Sources/JGMirror may name the types of the folders listed before it
in ORDER, never of one after it. A type belongs to the folder of the file that
declares it at top level; names declared in two folders are left out. Prints each
arrow that goes the wrong way (folder, type, file) and exits 1 if there is one.
"""
import collections
import os
import re
import sys

ORDER = [
    "Support",        # units, rules, URLs, concurrency helpers: needs nothing
    "Verify",         # SHA-256, packed digests, keyrings
    "Outcome",        # error codes, exit codes, item results, events
    "FileSystem",     # the root's descriptor, part files, output files, confinement
    "Manifest",       # YAML → manifest values
    "Transfer",       # the multipart engine, hosts
    "Plan",           # manifest → items
    "State",          # the state database and its records
    "ChecksumLists",  # lists, signatures, their cache and publishing
    "Apt",            # apt repositories: deb822, InRelease, Release, indexes, decompression
    "Report",         # JSON report, JUnit, metrics, merge
    "Progress",       # the terminal
    "Sync",           # a run: assessment, transfer, placement, pruning
]

DECLARATION = re.compile(
    r"^(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|internal|private|fileprivate|package|final|indirect)\s+)*"
    r"(?:struct|class|enum|protocol|actor|typealias)\s+([A-Z]\w*)",
    re.M,
)


def stripped(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"//.*", "", text)
    text = re.sub(r'"""(?:.|\n)*?"""', '""', text)
    return re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "Sources", "JGMirror")
    sources = {}
    owners = collections.defaultdict(set)
    for folder in sorted(os.listdir(root)):
        for directory, _, names in os.walk(os.path.join(root, folder)):
            for name in names:
                if name.endswith(".swift"):
                    path = os.path.join(directory, name)
                    with open(path, encoding="utf-8") as file:
                        text = stripped(file.read())
                    sources[path] = (folder, text)
                    for match in DECLARATION.finditer(text):
                        owners[match.group(1)].add(folder)
    unknown = sorted({folder for folder, _ in sources.values()} - set(ORDER))
    if unknown:
        print(f"folders missing from ORDER in {__file__}: {', '.join(unknown)}")
        return 1
    rank = {folder: index for index, folder in enumerate(ORDER)}
    wrong = []
    for path, (folder, text) in sorted(sources.items()):
        for name in sorted(set(re.findall(r"\b[A-Z]\w*\b", text))):
            homes = owners.get(name, set())
            if len(homes) == 1:
                home = next(iter(homes))
                if rank[home] > rank[folder]:
                    wrong.append(f"{os.path.relpath(path, root)}: names {name} from {home}, a folder after {folder}")
    for line in wrong:
        print(line)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
