#!/usr/bin/python3
"""gridbed's max-min network model beside SimGrid's CM02 on the same flows (issue 37).

For every transfer pattern of testbeds/network/, `gridbed flows export` writes the
simulated run's transfers as flows (start, bytes, the resources crossed, the
per-stream cap, gridbed's end); SimGrid replays the same flows on a platform of
the same resources (one SimGrid link per resource, one private link per cap,
latency 0, network/model:CM02: flow-level max-min sharing) and the two ends are
compared transfer by transfer. Then the two fan-ins of `gridbed flows shape`
(issue 60: every flow limited by its own sender, into a receiver they do not
fill; fast senders into a receiver they fill), all flows concurrent, are timed
in both at each size (default 1,000 and 3,000 flows): `gridbed flows replay`
and SimGrid, each as a whole process and as its own solve.

    apt-get install python3-simgrid    # Debian's SimGrid 3.32
    cargo build --release
    /usr/bin/python3 benches/simgrid_network.py [--gridbed target/release/gridbed] [--flows 1000,3000]

Exits non-zero when a pattern's per-transfer times differ by more than 1% or
gridbed is less than 10x faster on a fan-in (whole process).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PATTERNS = ["fan-in", "fan-out", "all-to-all", "mixed", "campuses", "coadd-hot"]


def simgrid_replay(trace_path, out_path):
    """Replays a flow trace in SimGrid (this process: SimGrid's engine runs once)."""
    from simgrid import Comm, Engine, LinkInRoute, NetZone, this_actor

    with open(trace_path) as f:
        trace = json.load(f)
    flows = trace["flows"]
    e = Engine(["simgrid_network", "--cfg=network/model:CM02", "--log=root.thres:critical"])
    zone = NetZone.create_full_zone("grid")
    links = []
    for r in trace["resources"]:
        link = zone.create_link(r["name"], float(r["bandwidth"]))
        link.set_latency(0.0)
        links.append(link.seal())
    driver = zone.create_host("driver", 1e9).seal()
    src, dst = [], []
    for i, f in enumerate(flows):
        s = zone.create_host(f"s{i}", 1e9).seal()
        d = zone.create_host(f"d{i}", 1e9).seal()
        route = [LinkInRoute(links[r]) for r in f["resources"]]
        if f.get("cap") is not None:
            cap = zone.create_link(f"cap{i}", float(f["cap"]))
            cap.set_latency(0.0)
            route.append(LinkInRoute(cap.seal()))
        zone.add_route(s.netpoint, d.netpoint, None, None, route, False)
        src.append(s)
        dst.append(d)
    zone.seal()
    ends = [None] * len(flows)
    order = sorted(range(len(flows)), key=lambda i: flows[i]["start"])

    def drive():
        pending, ids, k = [], [], 0
        while k < len(order) or pending:
            now = Engine.clock
            while k < len(order) and flows[order[k]]["start"] <= now:
                i = order[k]
                k += 1
                if flows[i]["bytes"] == 0:
                    ends[i] = now
                    continue
                pending.append(Comm.sendto_async(src[i], dst[i], int(round(flows[i]["bytes"]))))
                ids.append(i)
            if not pending:
                if k < len(order):
                    this_actor.sleep_until(flows[order[k]]["start"])
                continue
            if k < len(order):
                j = Comm.wait_any_for(pending, flows[order[k]]["start"] - now)
            else:
                j = Comm.wait_any(pending)
            if j >= 0:
                ends[ids[j]] = Engine.clock
                pending.pop(j)
                ids.pop(j)

    from simgrid import Actor

    Actor.create("driver", driver, drive)
    began = time.perf_counter()
    e.run()
    seconds = time.perf_counter() - began
    with open(out_path, "w") as f:
        json.dump({"ends": ends, "seconds": seconds}, f)


def run_simgrid(trace_path, work):
    out = os.path.join(work, "simgrid-ends.json")
    began = time.perf_counter()
    done = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--simgrid", trace_path, out],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        sys.exit(f"SimGrid failed on {trace_path}:\n{done.stderr}")
    wall = time.perf_counter() - began
    with open(out) as f:
        got = json.load(f)
    return got["ends"], got["seconds"], wall


def compare(flows, ends):
    """Per transfer: |SimGrid's time - gridbed's| / gridbed's, in %."""
    diffs = []
    for f, end in zip(flows, ends):
        ours = f["end"] - f["start"]
        theirs = end - f["start"]
        if ours > 0:
            diffs.append(100.0 * abs(theirs - ours) / ours)
    return statistics.mean(diffs), max(diffs)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--gridbed", default=os.path.join(ROOT, "target/release/gridbed"))
    p.add_argument("--flows", default="1000,3000", help="fan-in sizes, comma-separated")
    p.add_argument("--simgrid", nargs=2, metavar=("TRACE", "OUT"), help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.simgrid:
        simgrid_replay(*a.simgrid)
        return 0
    ok = True
    with tempfile.TemporaryDirectory() as work:
        print("| pattern | transfers | mean |Δ| | max |Δ| |")
        print("|---|---:|---:|---:|")
        for name in PATTERNS:
            trace_path = os.path.join(work, f"{name}.json")
            subprocess.run(
                [a.gridbed, "flows", "export", os.path.join(ROOT, "testbeds/network", f"{name}.toml"),
                 "--out", trace_path],
                check=True,
                stdout=subprocess.DEVNULL,
            )
            with open(trace_path) as f:
                flows = json.load(f)["flows"]
            ends, _, _ = run_simgrid(trace_path, work)
            mean, worst = compare(flows, ends)
            ok &= worst <= 1.0
            print(f"| {name} | {len(flows)} | {mean:.4f}% | {worst:.4f}% |")

        print()
        print("| shape | flows | per-transfer mean |Δ| | max |Δ| | gridbed process (s) | SimGrid process (s) | ratio | gridbed solve (s) | SimGrid solve (s) | ratio |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for shape in ["sender-fan-in", "receiver-fan-in"]:
            for n in [int(x) for x in a.flows.split(",")]:
                trace_path = os.path.join(work, f"{shape}-{n}.json")
                subprocess.run(
                    [a.gridbed, "flows", "shape", shape, "--flows", str(n), "--out", trace_path],
                    check=True,
                    stdout=subprocess.DEVNULL,
                )
                replayed = os.path.join(work, f"{shape}-{n}.gridbed.json")
                began = time.perf_counter()
                out = subprocess.run(
                    [a.gridbed, "flows", "replay", trace_path, "--out", replayed],
                    check=True,
                    capture_output=True,
                    text=True,
                ).stdout
                ours_wall = time.perf_counter() - began
                ours_solve = float(out.split(" replayed in ")[1].split(" s")[0])
                with open(replayed) as f:
                    flows = json.load(f)["flows"]
                ends, theirs_solve, theirs_wall = run_simgrid(trace_path, work)
                mean, worst = compare(flows, ends)
                ok &= worst <= 1.0 and theirs_wall / ours_wall >= 10.0
                print(
                    f"| {shape} | {n} | {mean:.4f}% | {worst:.4f}% | {ours_wall:.3f} | {theirs_wall:.3f} "
                    f"| {theirs_wall / ours_wall:.1f}x | {ours_solve:.4f} | {theirs_solve:.3f} "
                    f"| {theirs_solve / ours_solve:.0f}x |"
                )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
