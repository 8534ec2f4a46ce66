#!/usr/bin/env python3
"""Enforces the crate table of docs/architecture.md ("Crates and who may depend on whom").

For every row: the crates of ours in the crate's [dependencies] are among `may depend on`;
nothing in `must not reach` is in its normal dependency tree (`cargo tree -e normal`); its
sources do not name anything in `must not name`. Every crate of the workspace, and the fuzz
project, must have a row. Exits 1 naming each broken rule.
"""

import json
import pathlib
import re
import subprocess
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
SECTION = "## Crates and who may depend on whom"


def table():
    text = DOC.read_text(encoding="utf-8")
    if SECTION not in text:
        sys.exit(f"deps-check: {DOC} has no section `{SECTION}`")
    rows = {}
    for line in text.split(SECTION, 1)[1].split("\n## ", 1)[0].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 6 or cells[0] in ("crate", "---"):
            continue
        names = lambda cell: set(re.findall(r"`([^`]+)`", cell))
        crate = cells[0].strip("`")
        rows[crate] = {
            "path": cells[1].strip("`"),
            "may": names(cells[3]),
            "reach": names(cells[4]),
            "name": names(cells[5]),
        }
    return rows


def workspace():
    out = subprocess.run(
        ["cargo", "metadata", "--no-deps", "--format-version", "1"],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout
    packages = json.loads(out)["packages"]
    ours = {p["name"] for p in packages}
    direct = {
        p["name"]: {d["name"] for d in p["dependencies"] if d["name"] in ours and d.get("kind") is None}
        for p in packages
    }
    return ours, direct


def reached(crate):
    out = subprocess.run(
        ["cargo", "tree", "-p", crate, "-e", "normal", "--prefix", "none", "--format", "{p}"],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def named(path, crates):
    found = set()
    for file in (ROOT / path / "src").rglob("*.rs"):
        if "target" in file.parts:
            continue
        text = file.read_text(encoding="utf-8")
        for crate in crates:
            ident = crate.replace("-", "_")
            if re.search(rf"(?<![\w:]){ident}::", text) or re.search(rf"\buse {ident}\b", text):
                found.add((crate, file.relative_to(ROOT)))
    return found


def main():
    rows = table()
    ours, direct = workspace()
    fuzz = tomllib.loads((ROOT / "fuzz" / "Cargo.toml").read_text(encoding="utf-8"))
    fuzz_name = fuzz["package"]["name"]
    direct[fuzz_name] = {name for name, spec in fuzz.get("dependencies", {}).items()
                         if isinstance(spec, dict) and "path" in spec}
    broken = []
    for crate in sorted(ours | {fuzz_name}):
        if crate not in rows:
            broken.append(f"`{crate}` has no row in {DOC.relative_to(ROOT)}")
    for crate, row in rows.items():
        if crate not in direct:
            broken.append(f"the table names `{crate}`, which is not a crate here")
            continue
        for dep in sorted(direct[crate] - row["may"]):
            broken.append(f"`{crate}` depends on `{dep}`, not in its `may depend on`")
        if row["reach"] and crate in ours:
            for bad in sorted(reached(crate) & row["reach"]):
                broken.append(f"`{crate}` reaches `{bad}`")
        for bad, file in sorted(named(row["path"], row["name"])):
            broken.append(f"`{crate}` names `{bad}` ({file})")
    for line in broken:
        print(f"dependency rule broken: {line}")
    if broken:
        return 1
    print(f"dependency rules hold ({len(rows)} crates, table of {DOC.relative_to(ROOT)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
