#!/usr/bin/env python3
"""Keeps the repository self-contained: no tracked file may point at documents it does not hold.

Fails, naming file and line, when a tracked file (`git ls-files`) mentions:

- the upper-case design documents the project started from (the rules, contract and
  architecture files spelled in capitals with `.md`); the repository's own are `docs/rules.md`,
  `docs/contract.md`, `docs/architecture.md` and `docs/invariants.md`;
- a path into a sibling `shared` directory (two dots, a slash, `shared`), or into its design or
  seed folders;
- a numbered specification seed (the word seed followed by three digits) or an issue number (the
  word issue followed by a number): say in words what the rule or feature is, and cite the
  section of `docs/rules.md` that states it.

The patterns are built from pieces so that this file does not match itself. Binary files are
skipped. Exits 1 when anything is found, 0 otherwise.
"""

import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent

UPPER_DOCS = "|".join(["RU" + "LES", "CON" + "TRACT", "ARCHI" + "TECTURE"])
PATTERNS = [
    (re.compile(r"\b(?:" + UPPER_DOCS + r")\.md\b"), "a design document the repository does not hold"),
    (re.compile(r"\.\./" + "sha" + r"red\b"), "a path outside the repository"),
    (re.compile(r"\b" + "sha" + r"red/(?:design|seeds)\b"), "a path outside the repository"),
    (re.compile(r"\b[Ss]" + "eed" + r" \d{3}\b"), "a specification seed number"),
    (re.compile(r"\b[Ii]" + "ssue" + r" #?\d+\b"), "an issue number"),
]


def tracked_files():
    out = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True
    ).stdout
    return [p for p in out.decode("utf-8", "replace").split("\0") if p]


def main():
    found = 0
    for rel in tracked_files():
        path = ROOT / rel
        if not path.is_file():
            continue
        data = path.read_bytes()
        if b"\0" in data[:8192]:
            continue
        text = data.decode("utf-8", "replace")
        for number, line in enumerate(text.splitlines(), start=1):
            for pattern, what in PATTERNS:
                m = pattern.search(line)
                if m:
                    print(f"{rel}:{number}: {what}: `{m.group(0)}`")
                    found += 1
    if found:
        print(
            f"docs-check: {found} reference(s) to what the repository does not hold; "
            "point at docs/rules.md, docs/contract.md, docs/architecture.md or "
            "docs/invariants.md instead",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
