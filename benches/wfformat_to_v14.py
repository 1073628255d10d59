#!/usr/bin/env python3
"""Rewrites a WfFormat 1.5/1.6 instance (specification + execution, as
WfCommons 1.6 and `gridbed workflow write` write it) in the 1.4 layout that
dslab-dag's WfCommons parser reads (`workflow.tasks`, each with `files`
links, `runtimeInSeconds`, `parents`; a `wms` object). Only the standard
library: the same tasks, edges, runtimes and sizes, task names = ids.

    python3 benches/wfformat_to_v14.py IN.json OUT.json
"""
import json
import sys

src, dst = sys.argv[1], sys.argv[2]
with open(src) as f:
    doc = json.load(f)
wf = doc["workflow"]
spec = wf["specification"]
sizes = {f["id"]: f.get("sizeInBytes", 0) for f in spec.get("files", [])}
runtimes = {t["id"]: t.get("runtimeInSeconds", 0.0) for t in wf.get("execution", {}).get("tasks", [])}
tasks = []
for t in spec["tasks"]:
    files = [{"name": n, "sizeInBytes": sizes.get(n, 0), "link": "input"} for n in t.get("inputFiles", [])]
    files += [{"name": n, "sizeInBytes": sizes.get(n, 0), "link": "output"} for n in t.get("outputFiles", [])]
    tasks.append({
        "name": t["id"],
        "type": "compute",
        "runtimeInSeconds": runtimes.get(t["id"], 0.0),
        "cores": 1,
        "files": files,
        "parents": t.get("parents", []),
    })
out = {
    "name": doc.get("name", "workflow"),
    "schemaVersion": "1.4",
    "wms": {"name": "WfCommons", "version": "1.6"},
    "workflow": {"executedAt": "20260101T000000+0000", "makespanInSeconds": 0, "tasks": tasks, "machines": []},
}
with open(dst, "w") as f:
    json.dump(out, f)
print(f"{dst}: {len(tasks)} tasks")
