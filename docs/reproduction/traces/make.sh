#!/usr/bin/env bash
# Regenerates the numbers of docs/reproduction/traces.md from scratch:
# each platform's small run calibrates the prediction of its large run
# (one knob), then both runs are fitted together (two and three knobs).
# Run from the repository root, with ../shared/reference beside it.
set -euo pipefail
R=${R:-../shared/reference/wfinstances}
T=testbeds/traces/chameleon.toml
cargo build --release --quiet
G=./target/release/gridbed
for pair in "2mass-005d 2mass-02d" "2mass-025d 2mass-04d" "dss-05d dss-15d"; do
  set -- $pair
  small=$R/montage-chameleon-$1-001.json large=$R/montage-chameleon-$2-001.json
  echo "## $1 → $2 (job_start_delay fitted on $1)"
  $G calibrate "$small" --predict "$large" --testbed $T --out /dev/null
  echo "## $1 + $2 (job_start_delay, postscript_overhead)"
  $G calibrate "$small" "$large" --testbed $T --fit job_start_delay,postscript_overhead --out /dev/null
  echo "## $1 + $2 (the default knobs)"
  $G calibrate "$small" "$large" --testbed $T --out /dev/null
done
echo "## with Pegasus's auxiliary jobs ([planner]): job_start_delay fitted on the small run"
for pair in "2mass-005d 2mass-02d" "2mass-025d 2mass-04d" "dss-05d dss-15d"; do
  set -- $pair
  $G calibrate "$R/montage-chameleon-$1-001.json" --predict "$R/montage-chameleon-$2-001.json" \
    --testbed testbeds/traces/chameleon-planner.toml --out /dev/null
done
echo "## all six with HTCondor's defaults, nothing fitted"
for f in "$R"/montage-chameleon-*.json; do $G validate $T --trace "$f" | sed -n 3p; done
# Issue 42: the platform's data path fitted (the default knob choice), and
# other applications of the same machines predicted with it.
P=$R/1000genome-chameleon
echo "## 1000genome: the default fit on the 4-chromosome pair, every other run and Montage on pegasus predicted"
$G calibrate $P-4ch-100k-001.json $P-4ch-250k-001.json --testbed $T --out /dev/null \
  --predict $P-2ch-100k-001.json $P-2ch-250k-001.json $P-6ch-100k-001.json $P-6ch-250k-001.json \
  $P-8ch-100k-001.json $P-8ch-250k-001.json $R/montage-chameleon-dss-05d-001.json $R/montage-chameleon-dss-15d-001.json \
  --svg docs/reproduction/traces/1000genome-4ch.svg --json target/traces-1000genome-4ch.json
echo "## 1000genome: the testbed's own data path (WMS knobs only), as before issue 42"
$G calibrate $P-4ch-100k-001.json $P-4ch-250k-001.json --testbed $T --out /dev/null \
  --fit job_start_delay,negotiator_interval,postscript_overhead \
  --predict $P-2ch-100k-001.json $P-2ch-250k-001.json $P-6ch-100k-001.json $P-6ch-250k-001.json \
  $P-8ch-100k-001.json $P-8ch-250k-001.json
echo "## 1000genome: all eight runs, both ends of every transfer (four rates) and staging"
$G calibrate $P-*.json --testbed $T --out /dev/null \
  --fit submit.bandwidth_in,submit.bandwidth_out,machine.bandwidth_in,machine.bandwidth_out,staging
echo "## Montage on pegasus: the default fit on dss-05d + dss-15d, 1000genome predicted"
$G calibrate $R/montage-chameleon-dss-05d-001.json $R/montage-chameleon-dss-15d-001.json --testbed $T --out /dev/null \
  --predict $P-*.json
echo "## compute machines: the default fit on the two ilmn epigenomics runs, the other epigenomics and cycles predicted"
$G calibrate $R/epigenomics-chameleon-ilmn-1seq-100k-001.json $R/epigenomics-chameleon-ilmn-6seq-100k-001.json \
  --testbed $T --out /dev/null --predict $R/epigenomics-chameleon-hep-*.json $R/cycles-chameleon-*.json \
  --svg docs/reproduction/traces/compute-epigenomics.svg
echo "## compute machines: the WMS knobs only, as before issue 42"
$G calibrate $R/epigenomics-chameleon-ilmn-1seq-100k-001.json $R/epigenomics-chameleon-ilmn-6seq-100k-001.json \
  --testbed $T --out /dev/null --fit job_start_delay,negotiator_interval,postscript_overhead \
  --predict $R/epigenomics-chameleon-hep-*.json $R/cycles-chameleon-*.json
echo "## compute machines: cycles fitted, epigenomics predicted"
$G calibrate $R/cycles-chameleon-1l-1c-9p-001.json $R/cycles-chameleon-10l-1c-9p-001.json \
  --testbed $T --out /dev/null --predict $R/epigenomics-chameleon-*.json
# Issue 63: knobs chosen by cross-validation, intervals and their coverage.
echo "## 1000genome: the default on all eight runs, each left out predicted by the fit on the other seven"
$G calibrate $P-*.json --testbed $T --out /dev/null --json target/traces-1000genome-8.json
echo "## 1000genome: the same with Newton's method (the default beyond eight traces)"
$G calibrate $P-*.json --testbed $T --out /dev/null --method newton
echo "## 1000genome: fit on more against fit on fewer, on the six runs outside the 4-chromosome pair"
python3 - target/traces-1000genome-4ch.json target/traces-1000genome-8.json <<'PY'
import json, sys
pair, eight = (json.load(open(p)) for p in sys.argv[1:])
chosen = next(c for c in eight["candidates"] if c["name"] == eight["chosen"])
left = {l["trace"]: l["error"] for l in chosen["cross_validated"]["left_out"]}
rows = [(p["trace"], p["error"], left[p["trace"]]) for p in pair["predicted"] if p["trace"] in left]
for t, a, b in rows:
    print(f"  {t:40} pair {100*a:+6.1f}%   the other seven {100*b:+6.1f}%")
mean = lambda v: sum(abs(x) for x in v) / len(v)
print(f"  mean |error|: pair {100*mean([r[1] for r in rows]):.1f}%, the other seven {100*mean([r[2] for r in rows]):.1f}%")
PY
echo "## compute machines: the default on all six runs, each left out predicted by the fit on the other five"
$G calibrate $R/epigenomics-chameleon-*.json $R/cycles-chameleon-*.json --testbed $T --out /dev/null
