#!/usr/bin/env python3
"""Writes the generated sections of docs/*.md from the jgmirror binary given.

A section is the text between `<!-- BEGIN GENERATED NAME ... -->` and
`<!-- END GENERATED NAME -->`. `options-COMMAND` sections are the command's options,
read from the binary's `--experimental-dump-help` (the command definitions the man
page is made from); every other NAME is `jgmirror --generate-reference NAME`.
With --check, prints each stale section (file, name, a diff) and exits 1 instead
of writing.
"""
import difflib
import glob
import json
import os
import re
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
SECTION = re.compile(
    r"(<!-- BEGIN GENERATED (?P<name>[\w-]+)[^\n]*-->\n)(?P<body>.*?)(<!-- END GENERATED (?P=name) -->)", re.S
)


def option_table(command):
    """A Markdown table of one command's arguments, from the dump of its definition."""
    lines = ["| option | default | what it does |", "|---|---|---|"]
    for argument in command.get("arguments", []):
        if not argument.get("shouldDisplay", True):
            continue
        names = argument.get("names", [])
        if any(name["name"] in ("help", "version") for name in names):
            continue
        value = argument.get("valueName", "").upper()
        if argument["kind"] == "positional":
            spelling = value
        else:
            dashes = {"short": "-", "long": "--", "longWithSingleDash": "-"}
            spelling = ", ".join(dashes[name["kind"]] + name["name"] for name in names)
            if argument["kind"] == "option":
                spelling += " " + value
        if argument.get("isRepeating"):
            spelling += " …"
        default = argument.get("defaultValue", "")
        text = argument.get("abstract", "").replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")
        lines.append(f"| `{spelling}` | {('`' + default + '`') if default else ''} | {text} |")
    return "\n".join(lines) + "\n"


def commands(binary):
    """Every command by its path (`sync`, `report-merge`), from the binary's dump."""
    dump = json.loads(subprocess.run([binary, "--experimental-dump-help"], check=True, capture_output=True).stdout)
    found = {}

    def walk(command, path):
        for sub in command.get("subcommands", []):
            name = "-".join(path + [sub["commandName"]])
            found[name] = sub
            walk(sub, path + [sub["commandName"]])

    walk(dump["command"], [])
    return found


def main():
    binary = sys.argv[1]
    check = "--check" in sys.argv[2:]
    known = commands(binary)
    stale = []
    for page in sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))):
        with open(page, encoding="utf-8") as source:
            text = source.read()

        def render(match):
            name = match.group("name")
            if name.startswith("options-"):
                command = known.get(name[len("options-"):])
                if command is None:
                    sys.exit(f"{os.path.relpath(page, ROOT)}: no command for section {name}")
                body = option_table(command)
            else:
                run = subprocess.run([binary, "--generate-reference", name], capture_output=True, text=True)
                if run.returncode != 0:
                    sys.exit(f"{os.path.relpath(page, ROOT)}: {run.stderr.strip()}")
                body = run.stdout
            if body != match.group("body"):
                stale.append((page, name, match.group("body"), body))
            return match.group(1) + body + match.group(4)

        generated = SECTION.sub(render, text)
        if not check and generated != text:
            with open(page, "w", encoding="utf-8") as target:
                target.write(generated)
            print(f"wrote {os.path.relpath(page, ROOT)}", file=sys.stderr)
    if check:
        for page, name, old, new in stale:
            print(f"{os.path.relpath(page, ROOT)}: section {name} is stale: run scripts/docs.sh and commit it", file=sys.stderr)
            diff = difflib.unified_diff(old.splitlines(), new.splitlines(), "committed", "generated", lineterm="", n=0)
            print("\n".join(list(diff)[:20]), file=sys.stderr)
        if stale:
            return 1
        print("docs/: generated sections are current", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
