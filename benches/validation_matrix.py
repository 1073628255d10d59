#!/usr/bin/env python3
"""The validation matrix: `gridbed validate` (the same scenario and seed on
both engines) on every shipped testbed that runs live, with each strategy it
is meant for, plus cases built here: a file server saturated at its
max_connections, the quickstart under round-robin, and table 3's ORIG with
its machines out of step (submissions drawn 0-10 s late). Writes
docs/validation.md: makespan and transfer counts live against sim, and
whether the makespan is within the goal (5%).

    cargo build --release && python3 benches/validation_matrix.py [--only NAME]

Live runs take their real time (the sum of makespan / time_scale, about
35 minutes here); run it on an otherwise idle machine.
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GRIDBED = os.path.join(ROOT, "target", "release", "gridbed")
GOAL = 0.05

# (row name, testbed, strategy or None for the testbed's own, why it is here)
ROWS = [
    ("quickstart", "testbeds/quickstart.toml", None, "the README's first run"),
    ("quickstart", "testbeds/quickstart.toml", "round-robin", "a spread over five sites"),
    ("quickstart", "testbeds/quickstart.toml", "random", ""),
    ("saturated server", "@saturated", "round-robin", "submit-host serves 2 at once"),
    ("tight disk", "testbeds/tight-disk.toml", None, "100 MB disks, 400 MB per level"),
    ("chaos", "testbeds/chaos.toml", None, "crashes, lost pool, corrupt and reset replies"),
    ("clustering", "testbeds/clustering.toml", None, ""),
    ("osg-12-pipeline", "testbeds/osg-12-pipeline.toml", None, "background load"),
    ("dslab-platform", "testbeds/dslab-platform.toml", None, ""),
    ("dag-condor-users", "testbeds/dag-condor-users.toml", None, "two submit machines"),
]
for t in range(2, 7):
    for s in ["orig", "job-c", "dag-c"]:
        ROWS.append((f"dag-condor-table{t}", f"testbeds/dag-condor-table{t}.toml", s, ""))
    if t == 3:
        ROWS.append(("dag-condor-table3, out of step", "@out-of-step", "orig",
                     "each job submitted 0-10 s late (uniform, seeded): the machines out of step"))
ROWS += [
    ("spcl-live-4", "testbeds/spcl-live-4.toml", None, "seed 000's first live run"),
    ("spcl-live-10", "testbeds/spcl-live-10.toml", "random", "seed 000's second"),
    ("spcl-live-10", "testbeds/spcl-live-10.toml", "clustered", ""),
]

# Shipped testbeds not in the matrix, and why.
LEFT_OUT = [
    ("spcl-grid3", "2.7 TB nominal over 5.4 M transfers: sim only (its own header)"),
    ("grid-100", "1 M tasks: sim only"),
    ("dag-condor-sites", "a site catalogue, not a testbed"),
    ("falkon-diffusion, falkon-diffusion-small",
     "the data-diffusion farm, validated by `gridbed farm --validate` (docs/reproduction/diffusion.md)"),
]


def saturated(tmp):
    """The quickstart with a submit host that serves two transfers at once."""
    with open(os.path.join(ROOT, "testbeds", "quickstart.toml")) as f:
        body = f.read()
    body = body.replace('name = "quickstart"', 'name = "saturated-server"', 1)
    body = body.replace('[[site]]\nname = "submit-host"\n',
                        '[[site]]\nname = "submit-host"\nmax_connections = 2\n', 1)
    path = os.path.join(tmp, "saturated-server.toml")
    with open(path, "w") as f:
        f.write(body)
    return path


def out_of_step(tmp):
    """Table 3 with each submission drawn 0-10 s late (the same draws in
    both engines): the 25 machines no longer move their files in step."""
    with open(os.path.join(ROOT, "testbeds", "dag-condor-table3.toml")) as f:
        body = f.read()
    body = body.replace('sites_file = "dag-condor-sites.toml"',
                        f'sites_file = "{os.path.join(ROOT, "testbeds", "dag-condor-sites.toml")}"', 1)
    body = body.replace("maxpre = 0\n",
                        'maxpre = 0\nsubmit_overhead = { dist = "uniform", min = 0, max = 10 }\n', 1)
    assert "submit_overhead" in body
    path = os.path.join(tmp, "dag-condor-table3-out-of-step.toml")
    with open(path, "w") as f:
        f.write(body)
    return path


def figure(rows, name):
    for r in rows:
        if r["name"] == name:
            return r["sim"], r["live"], r["deviation"]
    raise KeyError(name)


def run(tb, strategy, tmp):
    out = os.path.join(tmp, "cmp.json")
    cmd = [GRIDBED, "validate", tb, "--json", out, "-q", "--tolerance", str(GOAL)]
    if strategy:
        cmd += ["--strategy", strategy]
    started = time.time()
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.time() - started
    if not os.path.exists(out):
        return {"error": (p.stderr or p.stdout).strip().splitlines()[-1:], "wall": wall}
    with open(out) as f:
        c = json.load(f)
    os.remove(out)
    ms, ml, md = figure(c["rows"], "makespan (s)")
    ts, tl, _ = figure(c["rows"], "transfers")
    rs, rl, _ = figure(c["rows"], "re-plans")
    return {"makespan": (ms, ml, md), "transfers": (ts, tl), "replans": (rs, rl),
            "within": c["within_tolerance"], "dominant": c["dominant_phase"], "wall": wall}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", help="run only the rows whose name contains this")
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "validation.md"))
    args = ap.parse_args()
    if not os.path.exists(GRIDBED):
        sys.exit("build first: cargo build --release")
    version = subprocess.run([GRIDBED, "--version"], capture_output=True, text=True).stdout.strip()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                            capture_output=True, text=True).stdout.strip()
    # Rows measured earlier (kept in target/, not committed) stand for those
    # that --only leaves out.
    cache = os.path.join(ROOT, "target", "validation-matrix.json")
    earlier = {}
    if args.only and os.path.exists(cache):
        with open(cache) as f:
            earlier = {(n, s): r for n, s, r in json.load(f)}
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, tb, strategy, why in ROWS:
            if args.only and args.only not in name:
                if (name, strategy) in earlier:
                    results.append((name, strategy, why, earlier[(name, strategy)]))
                continue
            path = {"@saturated": saturated, "@out-of-step": out_of_step}.get(tb, lambda _: tb)(tmp)
            r = run(path, strategy, tmp)
            results.append((name, strategy, why, r))
            if "error" in r:
                print(f"{name} {strategy or ''}: error {r['error']}", flush=True)
            else:
                print(f"{name} {strategy or ''}: {100 * r['makespan'][2]:+.2f}% "
                      f"transfers {r['transfers'][0]:.0f}/{r['transfers'][1]:.0f} "
                      f"({r['wall']:.0f} s)", flush=True)
    with open(cache, "w") as f:
        json.dump([[n, s, r] for n, s, _, r in results], f)
    lines = [
        "# Validation matrix: live against the simulator",
        "",
        "Each row is `gridbed validate` on one testbed and strategy: the same",
        "scenario and seed run by the simulator and by the live engine (real",
        "sites on loopback, every byte moved), side by side. The goal is a",
        f"makespan within {100 * GOAL:.0f}% on every row; a row outside it says why.",
        "",
        f"Regenerated by `python3 benches/validation_matrix.py` ({version}, commit",
        f"{commit}, {platform.machine()}, {os.cpu_count()} cores, "
        f"{time.strftime('%Y-%m-%d')}). Live figures vary",
        "from run to run on a shared machine; the simulator's do not.",
        "",
        "| testbed | strategy | sim makespan (s) | live makespan (s) | deviation | transfers sim / live | re-plans sim / live | within 5% | wall (s) |",
        "|---|---|---:|---:|---:|---:|---:|:-:|---:|",
    ]
    for name, strategy, why, r in results:
        label = strategy or "(its own)"
        if "error" in r:
            lines.append(f"| {name} | {label} | | | | | | error: {' '.join(r['error'])} | {r['wall']:.0f} |")
            continue
        ms, ml, md = r["makespan"]
        dev = "n/a" if md is None else f"{100 * md:+.2f}%"
        ts, tl = r["transfers"]
        rs, rl = r["replans"]
        ok = "yes" if r["within"] else f"no ({r['dominant']})"
        lines.append(f"| {name} | {label} | {ms:.1f} | {ml:.1f} | {dev} | {ts:.0f} / {tl:.0f} "
                     f"| {rs:.0f} / {rl:.0f} | {ok} | {r['wall']:.0f} |")
    lines += ["", "Why each row is here:", ""]
    seen = set()
    for name, strategy, why, _ in results:
        if why and (name, why) not in seen:
            seen.add((name, why))
            lines.append(f"- **{name}**{' (' + strategy + ')' if strategy else ''}: {why}.")
    lines += ["", "Shipped testbeds left out of the matrix:", ""]
    lines += [f"- **{n}**: {why}." for n, why in LEFT_OUT]
    # What is written below the marker by hand (the reading of the rows)
    # stays when the table is regenerated.
    marker = "<!-- notes: kept when the matrix is regenerated -->"
    kept = ""
    if os.path.exists(args.out):
        with open(args.out) as f:
            old = f.read()
        if marker in old:
            kept = old.split(marker, 1)[1].strip()
    lines += ["", marker, "", kept] if kept else ["", marker]
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
