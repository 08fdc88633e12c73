#!/usr/bin/env python3
"""Checks that the library's folders depend on each other one way only, and that the
tests keep the layout of the sources.

Each folder of Sources/JGMirror may name the types of the folders listed before it
in ORDER, never of one after it. A type belongs to the folder of the file that
declares it at top level; names declared in two folders are left out. Prints each
arrow that goes the wrong way (folder, type, file).

Tests/JGMirrorTests holds no file of its own, only folders: one per folder of
Sources/JGMirror (or a target of Sources, such as LinkSimulator) with the tests of
that code, EndToEnd/ for the tests that drive the built binary as a whole, and
Helpers/ for what the suites share. A file under Helpers/ declares no @Test, a file
elsewhere declares at least one, and no file under Tests/ is over MAX_TEST_LINES
lines. Prints each file out of place.

Exits 1 if anything was printed.
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

# The folders of Tests/JGMirrorTests that follow no folder of Sources.
TEST_FOLDERS = {
    "EndToEnd",  # the built binary as a whole: sync, plan, get, the library's API
    "Helpers",   # what the suites share: runners, servers, fixtures, suite set-ups
}

# A test file longer than this is split by topic.
MAX_TEST_LINES = 600

TEST_DECLARATION = re.compile(r"^\s*@Test\b", re.M)

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


def misplaced_tests(package):
    """The files under `package`/Tests out of the layout the module docstring gives."""
    sources = os.path.join(package, "Sources")
    allowed = TEST_FOLDERS | set(os.listdir(sources)) | set(os.listdir(os.path.join(sources, "JGMirror")))
    tests = os.path.join(package, "Tests", "JGMirrorTests")
    problems = []
    for directory, _, names in sorted(os.walk(os.path.join(package, "Tests"))):
        for name in sorted(names):
            path = os.path.join(directory, name)
            shown = os.path.relpath(path, package)
            with open(path, encoding="utf-8", errors="replace") as file:
                text = file.read()
            lines = text.count("\n")
            if lines > MAX_TEST_LINES:
                problems.append(f"{shown}: {lines} lines, over {MAX_TEST_LINES}: split it by topic")
            if os.path.commonpath([directory, tests]) != tests or not name.endswith(".swift"):
                continue
            folder = os.path.relpath(directory, tests).split(os.sep)[0]
            declares_tests = TEST_DECLARATION.search(stripped(text)) is not None
            if directory == tests:
                problems.append(f"{shown}: in no folder: move it to the folder of the code it tests")
            elif folder not in allowed:
                problems.append(f"{shown}: {folder}/ follows no folder of Sources/JGMirror or Sources, nor is it "
                                f"one of {', '.join(sorted(TEST_FOLDERS))}")
            elif folder == "Helpers" and declares_tests:
                problems.append(f"{shown}: declares a @Test: move it to the folder of the code it tests")
            elif folder != "Helpers" and not declares_tests:
                problems.append(f"{shown}: declares no @Test: what suites share goes in Tests/JGMirrorTests/Helpers/")
    return problems


def main():
    package = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(package, "Sources", "JGMirror")
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
    wrong += misplaced_tests(package)
    for line in wrong:
        print(line)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
