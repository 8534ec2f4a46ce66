#!/usr/bin/env python3
"""Every metric that deploy/prometheus/alerts.yml and the Grafana dashboards query must be one the
binaries export (`just deploy-check` runs this).

The exported names are read from the Rust source: the first argument of every `counter!`,
`gauge!`, `histogram!` and `describe_*!` macro in crates/*/src and bin-*/src, a string literal or
a `const NAME: &str = "…"` of the source. A histogram also answers as `<name>_bucket`, `_sum` and
`_count`. Prometheus adds `up` and the `scrape_*` series itself.

The queried names are the metric names of the PromQL of each rule's `expr` and of each panel's
`targets[].expr`: identifiers that are not functions, keywords, label names (grouping clauses,
label matchers) or durations.

    scripts/metrics-check.py [--list | --dashboard-rules OUT | --scrape FILE...]

--list prints the exported names and exits. --dashboard-rules OUT writes every dashboard query
as a recording rule (variables replaced) for `promtool check rules` to parse, and exits. --scrape FILE (a saved /metrics text) also checks
that every `cmp_` family of the scrape is one the source knows (a live scrape shows only what
was recorded, so it cannot be the gate the other way round). Exits 1 naming the file and the
metric of every name it cannot find.
"""
import glob
import json
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
RULES = ["deploy/prometheus/alerts.yml"]
DASHBOARDS = "deploy/grafana/*.json"
# Series Prometheus makes for every scrape target.
PROMETHEUS_OWN = {
    "up", "scrape_duration_seconds", "scrape_samples_scraped",
    "scrape_samples_post_metric_relabeling", "scrape_series_added",
}
KEYWORDS = {
    "by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless",
    "bool", "offset", "atan2", "inf", "nan", "start", "end",
}
IDENT = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
MACRO = re.compile(
    r"\b(?:metrics::)?(?:describe_)?(counter|gauge|histogram)!\s*\(\s*"
    r"(?:\"(?P<lit>[^\"]+)\"|(?P<path>[A-Za-z_][A-Za-z0-9_:]*))"
)
CONST = re.compile(r"\bconst\s+([A-Z][A-Z0-9_]*)\s*:\s*&(?:'static\s+)?str\s*=\s*\"([^\"]+)\"")


def rust_sources():
    for pattern in ("crates/*/src/**/*.rs", "bin-*/src/**/*.rs"):
        yield from sorted(glob.glob(os.path.join(ROOT, pattern), recursive=True))


def exported():
    """{name: kind} of every metric the source registers, and the errors of unresolved names."""
    texts = {path: open(path, encoding="utf-8").read() for path in rust_sources()}
    consts = {}  # name -> {value}, of the constants that look like metric names
    for text in texts.values():
        for name, value in CONST.findall(text):
            if value.startswith("cmp_"):
                consts.setdefault(name, set()).add(value)
    names, errors = {}, []
    for path, text in texts.items():
        local = dict(CONST.findall(text))
        for m in MACRO.finditer(text):
            kind = m.group(1)
            if m.group("lit") is not None:
                values = {m.group("lit")}
            else:
                ident = m.group("path").split("::")[-1]
                # The file's own constant, else the one constant of that name in the source.
                values = {local[ident]} if ident in local else consts.get(ident)
                if not values or len(values) != 1:
                    line = text.count("\n", 0, m.start()) + 1
                    errors.append(
                        f"{os.path.relpath(path, ROOT)}:{line}: {kind}!({m.group('path')}): "
                        "cannot tell the metric name (not one `const … &str` of the source); "
                        "teach scripts/metrics-check.py"
                    )
                    continue
            for v in values:
                names[v] = kind
    return names, errors


def queryable(names):
    """Every series name a query may use: histograms with their three series."""
    out = set(PROMETHEUS_OWN)
    for name, kind in names.items():
        out.add(name)
        if kind == "histogram":
            out.update({name + "_bucket", name + "_sum", name + "_count"})
    return out


def metric_names(expr):
    """The metric names an expression queries."""
    s = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`', '""', expr)  # strings
    s = re.sub(r"\{[^{}]*\}", " ", s)  # label matchers (and their $variables)
    s = re.sub(r"\[[^\[\]]*\]", " ", s)  # ranges and subqueries
    s = re.sub(
        r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)", " ", s
    )  # label lists
    s = re.sub(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?", " ", s)  # dashboard variables elsewhere
    s = re.sub(r"\b\d[0-9.eE+-]*[a-zA-Z]*\b", " ", s)  # numbers and durations
    found = []
    for m in IDENT.finditer(s):
        word = m.group(0)
        rest = s[m.end():].lstrip()
        if rest.startswith("("):
            continue  # a function or an aggregation
        if word.lower() in KEYWORDS:
            continue
        found.append(word)
    return found


def rule_exprs(path):
    import yaml  # the deploy-check venv has it (kubernetes-validate needs it)

    doc = yaml.safe_load(open(path, encoding="utf-8"))
    for group in doc.get("groups", []):
        for rule in group.get("rules", []):
            yield rule.get("alert") or rule.get("record"), rule["expr"]


def dashboard_exprs(path):
    doc = json.load(open(path, encoding="utf-8"))

    def panels(items):
        for p in items:
            yield p
            yield from panels(p.get("panels", []))

    for p in panels(doc.get("panels", [])):
        for t in p.get("targets", []):
            if t.get("expr"):
                yield f"panel {p.get('title')!r}", t["expr"]
    for v in doc.get("templating", {}).get("list", []):
        q = v.get("query")
        if v.get("type") == "query" and isinstance(q, dict):
            q = q.get("query")
        if v.get("type") == "query" and isinstance(q, str):
            m = re.match(r"\s*(?:label_values|query_result)\((.*)\)\s*$", q, re.S)
            if m:
                yield f"variable {v.get('name')!r}", m.group(1).rsplit(",", 1)[0] if q.strip().startswith("label_values") and "," in m.group(1) else m.group(1)


# What the dashboards' variables stand for when their queries are checked by promtool.
VARIABLES = {"$__rate_interval": "5m", "$__interval": "1m", "$__range": "1h",
             "$worker_job": "cmp-worker", "$api_job": "cmp-api"}


def dashboard_rules(out):
    """Writes the dashboards' queries as recording rules, for `promtool check rules` to parse."""
    lines = ["groups:"]
    for path in sorted(glob.glob(os.path.join(ROOT, DASHBOARDS))):
        lines += [f"  - name: {json.dumps(os.path.relpath(path, ROOT))}", "    rules:"]
        for i, (where, expr) in enumerate(dashboard_exprs(path)):
            for var, value in VARIABLES.items():
                expr = expr.replace(var, value)
            slug = re.sub(r"[^a-z0-9]+", "_", where.lower()).strip("_")
            lines += [f"      # {where}", f"      - record: dashboard:{slug}:{i}",
                      f"        expr: {json.dumps(expr)}"]
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def main(argv):
    names, errors = exported()
    if "--list" in argv:
        for n in sorted(names):
            print(f"{n} {names[n]}")
        return 0
    if "--dashboard-rules" in argv:
        dashboard_rules(argv[argv.index("--dashboard-rules") + 1])
        return 0
    known = queryable(names)
    checked, failed = 0, list(errors)
    sources = [(p, rule_exprs) for p in RULES] + [
        (os.path.relpath(p, ROOT), dashboard_exprs)
        for p in sorted(glob.glob(os.path.join(ROOT, DASHBOARDS)))
    ]
    for rel, read in sources:
        for where, expr in read(os.path.join(ROOT, rel)):
            found = metric_names(expr)
            if not found:
                failed.append(f"{rel}: {where}: no metric found in {expr!r}")
            for name in found:
                checked += 1
                if name not in known:
                    failed.append(
                        f"{rel}: {where}: metric {name} is not exported by cmp-worker or cmp-api "
                        "(no counter!/gauge!/histogram! in crates/*/src or bin-*/src names it)"
                    )
    if "--scrape" in argv:
        for path in argv[argv.index("--scrape") + 1:]:
            text = open(path, encoding="utf-8").read()
            families = set(re.findall(r"^# TYPE (cmp_[a-z0-9_]+) ", text, re.M))
            for n in re.findall(r"^(cmp_[a-z0-9_]+)[{ ]", text, re.M):
                base = re.sub(r"_(bucket|sum|count)$", "", n)
                families.add(n if n in families or base not in families else base)
            unknown = sorted(f for f in families if f not in known)
            for fam in unknown:
                failed.append(f"{path}: the scrape has {fam}, which the source check does not know")
            if not unknown:
                print(f"metrics-check: {path}: {len(families)} cmp_ families, all known to the source check")
    for f in failed:
        print(f"metrics-check: {f}", file=sys.stderr)
    if failed:
        return 1
    print(
        f"metrics-check: {checked} metric references in {len(sources)} files, "
        f"all among the {len(names)} metrics the binaries export"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
