"""A tour of gridbed from Python, runnable as a script (`python3
examples/python/tour.py [OUT_DIR]`), as a notebook would go cell by cell.

1. A site selector written as a Python function.
2. One run of it beside a built-in, in the simulator.
3. A sweep: it against two built-ins, over seeds and site counts.
4. The sweep's mean makespans as a table, and as a chart where matplotlib
   is installed (OUT_DIR/tour-makespans.png).

It needs only `pip install gridbed` (or, in the repository, the `gridbed`
command built and GRIDBED_BIN pointing at it).
"""

import os
import sys

try:
    import gridbed
except ImportError:  # not installed (pip install gridbed): the repository's copy
    sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
    import gridbed


# 1. The idea: Data-Present sends a job where its data is even when that
# site's slots are all taken. Send it to the eligible site with the largest
# share of its slots free (its CPUs come from the handshake, in
# request["hello"]), and among those equally free to the one holding most
# of its input bytes; break ties by the draw, so a run repeats for a seed.
def free_share(request):
    cpus = request["hello"]["sites"]
    free = {s["id"]: s["free"] / max(1, cpus[s["id"]]["cpus"]) for s in request["sites"]}
    present = {}
    for f in request["job"]["inputs"]:
        for site in f["holders"]:
            present[site] = present.get(site, 0) + f["size"]
    key = {s: (free[s], present.get(s, 0)) for s in request["eligible"]}
    best = max(key.values())
    tied = [s for s in request["eligible"] if key[s] == best]
    return tied[gridbed.pick(request["draw"], len(tied))]


def main(out):
    quickstart = gridbed.testbed("quickstart")
    mine = gridbed.policy(select=free_share)

    # 2. One run each, in the simulator (nominal seconds).
    print("one run of the quickstart (102 jobs, 5 sites), simulated:")
    for name, strategy in (("data-present", "data-present"), ("free_share", mine)):
        run = gridbed.run(quickstart, strategy=strategy, seed=1)
        s = run["summary"]
        print(f"  {name:<18} makespan {s['makespan_s']:8.1f} s, {s['transfers']} transfers, {len(run.jobs)} attempts")

    # 3. The sweep: three strategies x site counts 2..5 x seeds 1..3.
    sites, seeds = [2, 3, 4, 5], [1, 2, 3]
    sweep = gridbed.sweep(
        quickstart,
        strategies=["round-robin", "data-present", mine],
        sites=sites,
        maxpre=[20],
        seeds=seeds,
    )
    print(f"\nthe sweep: {len(sweep.rows)} runs; mean makespan in minutes over seeds {seeds}:")

    # 4. The summary as a table (and a chart).
    strategies = list(dict.fromkeys(r["strategy"] for r in sweep.summary))
    mean = {(r["strategy"], r["sites"]): r["mean_s"] / 60 for r in sweep.summary}
    print(f"  {'sites':>5} " + " ".join(f"{s:>18}" for s in strategies))
    for n in sites:
        print(f"  {n:>5} " + " ".join(f"{mean[s, n]:>18.1f}" for s in strategies))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("\n(matplotlib is not installed: no chart)")
        return
    fig, ax = plt.subplots(figsize=(6, 4))
    for s in strategies:
        ax.plot(sites, [mean[s, n] for n in sites], marker="o", label=s)
    ax.set_xlabel("sites")
    ax.set_ylabel("mean makespan (min)")
    ax.set_title("quickstart, MAXPRE 20, seeds 1-3 (simulated)")
    ax.legend()
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "tour-makespans.png")
    fig.savefig(path, dpi=100, bbox_inches="tight")
    print(f"\nchart written to {path}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
