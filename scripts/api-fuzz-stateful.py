#!/usr/bin/env python3
"""What schemathesis' stateful phase exercised, from its NDJSON report (scripts/api-fuzz.sh).

    api-fuzz-stateful.py OPENAPI_JSON REPORT_NDJSON

Prints the scenarios, the steps (requests), the steps that followed a link, and the links of
the document followed at least once, with the answers they got. Exits 1 when no link of the
document was followed at all (the links are broken or the phase did nothing).
"""

import collections
import json
import sys


def document_links(doc):
    """Every link of the document as schemathesis names it: `METHOD PATH -> [status] NAME -> ...`."""
    by_id = {}
    for path, item in doc["paths"].items():
        for method, op in item.items():
            by_id[op["operationId"]] = f"{method.upper()} {path}"
    links = set()
    for path, item in doc["paths"].items():
        for method, op in item.items():
            for status, response in op["responses"].items():
                for name, link in response.get("links", {}).items():
                    source = f"{method.upper()} {path}"
                    links.add(f"{source} -> [{status}] {name} -> {by_id[link['operationId']]}")
    return links


def main():
    doc_path, report_path = sys.argv[1], sys.argv[2]
    with open(doc_path) as f:
        declared = document_links(json.load(f))
    scenarios = steps = linked = 0
    followed = collections.defaultdict(collections.Counter)
    inferred = set()
    statuses = collections.Counter()
    with open(report_path) as f:
        for line in f:
            event = json.loads(line)
            finished = event.get("ScenarioFinished")
            if not finished or finished.get("phase") != "stateful" or finished.get("status") == "skip":
                continue
            scenarios += 1
            recorder = finished.get("recorder") or {}
            answers = {}
            for case_id, interaction in recorder.get("interactions", {}).items():
                response = interaction.get("response") or {}
                answers[case_id] = str(response.get("status_code", "none"))
            for case_id, node in recorder.get("cases", {}).items():
                steps += 1
                status = answers.get(case_id, "none")
                statuses[status[0] + "xx" if status != "none" else status] += 1
                transition = node.get("transition")
                if not transition or not node.get("is_transition_applied"):
                    continue
                linked += 1
                if transition.get("is_inferred"):
                    inferred.add(transition["id"])
                else:
                    followed[transition["id"]][status] += 1
    print(
        f"api-fuzz: stateful: {scenarios} scenarios, {steps} steps, {linked} of them "
        f"following a link; {len(followed)} of the document's {len(declared)} links followed, "
        f"plus {len(inferred)} links schemathesis inferred"
    )
    print("api-fuzz: stateful answers: " + ", ".join(f"{k} {v}" for k, v in sorted(statuses.items())))
    for name in sorted(followed):
        counts = ", ".join(f"{s}x{n}" for s, n in sorted(followed[name].items()))
        print(f"  {name}: {counts}")
    unknown = set(followed) - declared
    if unknown:
        print(f"api-fuzz: followed links the document does not have: {sorted(unknown)}")
    if not followed:
        print("api-fuzz: the stateful phase followed no link of the document", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
