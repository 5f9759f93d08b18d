#!/usr/bin/env python3
"""Every rdma-server / rdma-client command in README.md and docs/ uses flags
the programs have: a renamed or removed flag fails here, not in a reader's
shell.

    doc_commands.py BUILD_DIR

Reads the code blocks (``` fences) and inline `code` of each page, takes the
commands that start with one of the programs (after a path, `sudo`, or
`VAR=value` words), joins lines continued with a backslash, and checks each
--flag against the program's --help-all. Placeholders such as <ip> and
$VARS are fine; only the flag names are checked.
"""
import pathlib
import re
import subprocess
import sys

PROGRAMS = ("rdma-server", "rdma-client")
ROOT = pathlib.Path(__file__).resolve().parents[2]


def known_flags(build, program):
    binary = build / program.removeprefix("rdma-") / program
    text = subprocess.run([binary, "--help-all"], check=True, capture_output=True,
                          text=True).stdout
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", text))


def code_lines(markdown):
    """(line number, text) of each command-like piece of code in a page."""
    fenced = False
    pending, start = "", 0
    for number, line in enumerate(markdown.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            if not pending:
                start = number
            if line.rstrip().endswith("\\"):
                pending += line.rstrip()[:-1] + " "
                continue
            yield start, pending + line
            pending = ""
        else:
            for code in re.findall(r"`([^`]+)`", line):
                yield number, code


def commands(text):
    """(program, words after it) for each invocation of a program in `text`."""
    for piece in re.split(r"\s*(?:&&|\|\||;|\||\$\(|\))\s*", text):
        words = piece.split()
        while words and (re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", words[0])
                         or words[0] in ("sudo", "exec", "time", "$", "#", "nice")):
            words = words[1:]
        if words and pathlib.PurePath(words[0]).name in PROGRAMS:
            yield pathlib.PurePath(words[0]).name, words[1:]


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: doc_commands.py BUILD_DIR")
    build = pathlib.Path(sys.argv[1])
    flags = {p: known_flags(build, p) for p in PROGRAMS}
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    bad, checked = [], 0
    for page in pages:
        for number, text in code_lines(page.read_text()):
            for program, words in commands(text):
                checked += 1
                for word in words:
                    name = word.split("=", 1)[0]
                    if re.fullmatch(r"--[a-z][a-z0-9-]*", name) and name not in flags[program]:
                        bad.append(f"{page.relative_to(ROOT)}:{number}: {program} has no {name}")
    for line in bad:
        print(line, file=sys.stderr)
    if bad:
        sys.exit(f"doc_commands: {len(bad)} unknown flags in {checked} commands")
    print(f"doc_commands: {checked} commands in {len(pages)} pages use only flags that exist")


if __name__ == "__main__":
    main()
