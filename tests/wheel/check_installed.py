"""Checks the installed wheel as a Python user meets it (`.ci/wheel` runs
this with a fresh venv's interpreter, from a folder outside the
repository): the package and the command come from the venv, the shipped
Python policies run through the installed package and equal the
built-ins record for record in the simulator, a policy passed as a
function equals the same policy as a program, errors come back as
GridbedError, and the tour runs.

    python check_installed.py REPOSITORY
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

import gridbed

REPO = os.path.abspath(sys.argv[1])
checks = 0


def check(ok, what):
    global checks
    if not ok:
        sys.exit(f"wheel check failed: {what}")
    checks += 1


def same_run(a, b):
    """A run's record and rows without what names it or times the wall."""

    def strip(r):
        rec = json.loads(json.dumps(dict(r)))
        for key in ("run_id", "strategy", "eviction", "db", "testbed_path"):
            rec.pop(key, None)
        for key in ("wall_s", "setup_wall_s"):
            rec["summary"].pop(key, None)
        return rec, r.jobs, r.transfers

    return strip(a) == strip(b)


venv = sys.prefix
check(os.path.abspath(gridbed.__file__).startswith(venv), f"gridbed imported from {gridbed.__file__}, not {venv}")
check(os.path.abspath(gridbed.binary()).startswith(venv), f"the command is {gridbed.binary()}, not the venv's")
check(not os.path.exists(os.path.join(os.getcwd(), "python")), "run from outside the repository")

here = os.getcwd()
for name in ("data_present", "lru", "first_available", "tour"):
    shutil.copy(os.path.join(REPO, "examples", "python", f"{name}.py"), here)
sys.path.insert(0, here)
import data_present  # noqa: E402  (the copy: it imports the installed gridbed)

py = sys.executable
quickstart = gridbed.testbed("quickstart")

# Data-Present: the program, the function, the built-in.
builtin = gridbed.run(quickstart, strategy="data-present")
program = gridbed.run(quickstart, strategy=f'external[cmd="{py} data_present.py"]', cwd=here)
function = gridbed.run(quickstart, strategy=gridbed.policy(select=data_present.select))
check(builtin["summary"]["succeeded"] and len(builtin.jobs) >= 102, "the quickstart ran")
check(same_run(builtin, program), "data_present.py differs from data-present")
check(same_run(builtin, function), "gridbed.policy(select=data_present.select) differs from data-present")
print(f"quickstart, data-present: {builtin['summary']['makespan_s']:.1f} s, the program and the function equal")
try:
    import pandas  # noqa: F401

    check(len(builtin.frame("jobs")) == len(builtin.jobs), "the jobs' DataFrame")
except ImportError:
    try:
        builtin.frame("jobs")
        check(False, "frame() without pandas raised nothing")
    except ImportError as e:
        check("pandas" in str(e), f"frame() without pandas: {e}")

# LRU on SPCL's Grid3 testbed, making room many times.
with tempfile.TemporaryDirectory() as tmp:
    text = open(gridbed.testbed("spcl-live-4")).read()
    lru = text.replace('eviction = "lru"', f"eviction = 'external[cmd=\"{py} {here}/lru.py\"]'")
    check(lru != text, "spcl-live-4 names its eviction")
    mine = os.path.join(tmp, "spcl-lru.toml")
    with open(mine, "w") as f:
        f.write(lru)
    catalogue = os.path.join(os.path.dirname(gridbed.__file__), "sites.toml")
    a = gridbed.run(gridbed.testbed("spcl-live-4"), sites=catalogue)
    b = gridbed.run(mine, sites=catalogue)
    check(a["summary"]["evictions"] > 10000, f"LRU made room {a['summary']['evictions']} times")
    check(same_run(a, b), "lru.py differs from lru")
    print(f"spcl-live-4, LRU: {a['summary']['evictions']} evictions, the program equal")

# The farm's first-available, through the installed command.
with tempfile.TemporaryDirectory() as tmp:

    def farm(policy, name):
        out = os.path.join(tmp, f"{name}.json")
        cmd = [gridbed.binary(), "farm", gridbed.testbed("falkon-diffusion-small"), "--json", out]
        cmd += ["--policy", policy] if policy else []
        subprocess.run(cmd, check=True, capture_output=True)
        rec = json.load(open(out))
        return {k: v for k, v in rec.items() if k not in ("policy", "wall_s", "run_id")}

    program = f'external[cmd="{py} {here}/first_available.py", window=16]'
    check(farm("first-available", "builtin") == farm(program, "external"), "first_available.py differs")
    print("falkon-diffusion-small, first-available: the program equal")

# A calibration, where the shared real runs are beside the repository.
runs = os.path.join(REPO, "..", "shared", "reference", "wfinstances")
if os.path.isdir(runs):
    small, large = (os.path.join(runs, f"montage-chameleon-{d}-001.json") for d in ("2mass-005d", "2mass-02d"))
    fit = gridbed.calibrate(small, gridbed.testbed("traces/chameleon"), predict=[large], out=os.devnull)
    check(len(fit["predicted"]) == 1 and fit["rms_error"] >= 0, f"the calibration: {sorted(fit)}")
    print(f"calibrate: {len(fit['fitted'])} run fitted, {len(fit['predicted'])} predicted")

# Errors come back as GridbedError with gridbed's message.
try:
    gridbed.run(os.path.join(here, "no-such-testbed.toml"))
    check(False, "a missing testbed raised nothing")
except gridbed.GridbedError as e:
    check(e.returncode == 2 and "no-such-testbed.toml" in e.message, f"the error: {e.returncode} {e.message}")

# The tour.
tour = subprocess.run([py, "tour.py", here], capture_output=True, text=True, cwd=here)
check(tour.returncode == 0, f"the tour failed: {tour.stderr}")
print("\n$ python tour.py\n" + tour.stdout)
print(f"wheel check: {checks} checks passed")
