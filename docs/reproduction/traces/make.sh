#!/usr/bin/env bash
# Regenerates the numbers of docs/reproduction/traces.md from scratch:
# each platform's small run calibrates the prediction of its large run
# (one knob), then both runs are fitted together (two and three knobs).
# Issue 63 adds the fits chosen by cross-validation, every prediction's
# interval, and how often the intervals held (the summary at the end).
# Run from the repository root, with ../shared/reference beside it; its
# output as committed: bash docs/reproduction/traces/make.sh > docs/reproduction/traces/make.out
set -euo pipefail
R=${R:-../shared/reference/wfinstances}
T=testbeds/traces/chameleon.toml
cargo build --release --quiet
G=./target/release/gridbed
J=target/traces
mkdir -p $J
# `cal NAME ARGS…`: one calibration, its fit and predictions kept as JSON
# for the summaries at the end.
cal() { local name=$1; shift; $G calibrate "$@" --out /dev/null --json "$J/$name.json"; }
for pair in "2mass-005d 2mass-02d" "2mass-025d 2mass-04d" "dss-05d dss-15d"; do
  set -- $pair
  small=$R/montage-chameleon-$1-001.json large=$R/montage-chameleon-$2-001.json
  echo "## $1 → $2 (job_start_delay fitted on $1)"
  cal "montage-$1" "$small" --predict "$large" --testbed $T
  echo "## $1 + $2 (job_start_delay, postscript_overhead)"
  cal "montage-$1-$2-wms2" "$small" "$large" --testbed $T --fit job_start_delay,postscript_overhead
  echo "## $1 + $2 (the default knobs)"
  cal "montage-$1-$2" "$small" "$large" --testbed $T
done
echo "## with Pegasus's auxiliary jobs ([planner]): job_start_delay fitted on the small run"
for pair in "2mass-005d 2mass-02d" "2mass-025d 2mass-04d" "dss-05d dss-15d"; do
  set -- $pair
  cal "montage-$1-planner" "$R/montage-chameleon-$1-001.json" --predict "$R/montage-chameleon-$2-001.json" \
    --testbed testbeds/traces/chameleon-planner.toml
done
echo "## all six with HTCondor's defaults, nothing fitted"
for f in "$R"/montage-chameleon-*.json; do $G validate $T --trace "$f" | sed -n 3p; done
# Issue 42: the platform's data path fitted (the default knob choice), and
# other applications of the same machines predicted with it.
P=$R/1000genome-chameleon
echo "## 1000genome: the default fit on the 4-chromosome pair, every other run and Montage on pegasus predicted"
cal 1000genome-4ch $P-4ch-100k-001.json $P-4ch-250k-001.json --testbed $T \
  --predict $P-2ch-100k-001.json $P-2ch-250k-001.json $P-6ch-100k-001.json $P-6ch-250k-001.json \
  $P-8ch-100k-001.json $P-8ch-250k-001.json $R/montage-chameleon-dss-05d-001.json $R/montage-chameleon-dss-15d-001.json \
  --svg docs/reproduction/traces/1000genome-4ch.svg
echo "## 1000genome: the testbed's own data path (WMS knobs only), as before issue 42"
cal 1000genome-4ch-wms $P-4ch-100k-001.json $P-4ch-250k-001.json --testbed $T \
  --fit job_start_delay,negotiator_interval,postscript_overhead \
  --predict $P-2ch-100k-001.json $P-2ch-250k-001.json $P-6ch-100k-001.json $P-6ch-250k-001.json \
  $P-8ch-100k-001.json $P-8ch-250k-001.json
echo "## 1000genome: all eight runs, both ends of every transfer (four rates) and staging"
cal 1000genome-8-rates $P-*.json --testbed $T \
  --fit submit.bandwidth_in,submit.bandwidth_out,machine.bandwidth_in,machine.bandwidth_out,staging
echo "## Montage on pegasus: the default fit on dss-05d + dss-15d, 1000genome predicted"
cal montage-dss $R/montage-chameleon-dss-05d-001.json $R/montage-chameleon-dss-15d-001.json --testbed $T \
  --predict $P-*.json
echo "## compute machines: the default fit on the two ilmn epigenomics runs, the other epigenomics and cycles predicted"
cal compute-ilmn $R/epigenomics-chameleon-ilmn-1seq-100k-001.json $R/epigenomics-chameleon-ilmn-6seq-100k-001.json \
  --testbed $T --predict $R/epigenomics-chameleon-hep-*.json $R/cycles-chameleon-*.json \
  --svg docs/reproduction/traces/compute-epigenomics.svg
echo "## compute machines: the WMS knobs only, as before issue 42"
cal compute-ilmn-wms $R/epigenomics-chameleon-ilmn-1seq-100k-001.json $R/epigenomics-chameleon-ilmn-6seq-100k-001.json \
  --testbed $T --fit job_start_delay,negotiator_interval,postscript_overhead \
  --predict $R/epigenomics-chameleon-hep-*.json $R/cycles-chameleon-*.json
echo "## compute machines: cycles fitted, epigenomics predicted"
cal compute-cycles $R/cycles-chameleon-1l-1c-9p-001.json $R/cycles-chameleon-10l-1c-9p-001.json \
  --testbed $T --predict $R/epigenomics-chameleon-*.json
# Issue 63: knobs chosen by cross-validation, intervals and their coverage.
echo "## 1000genome: the default on all eight runs, each left out predicted by the fit on the other seven"
cal 1000genome-8 $P-*.json --testbed $T
echo "## 1000genome: the same with Newton's method (the default beyond eight traces)"
cal 1000genome-8-newton $P-*.json --testbed $T --method newton
echo "## 1000genome: fit on more against fit on fewer, on the six runs outside the 4-chromosome pair"
python3 - $J/1000genome-4ch.json $J/1000genome-8.json <<'PY'
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
cal compute-6 $R/epigenomics-chameleon-*.json $R/cycles-chameleon-*.json --testbed $T
echo "## every interval: how often the recorded makespan fell within it"
python3 - $J/*.json <<'PY'
import json, math, os, sys
from statistics import NormalDist
rows, raw, pooled = [], [], []
for path in sys.argv[1:]:
    fit = json.load(open(path))
    name = os.path.basename(path)[:-5]
    r = fit.get("ranges")
    if fit.get("interval"):
        i = fit["interval"]
        if name in ("1000genome-8", "compute-6"):  # the defaults: MODEL_ERROR's source
            pooled.append((name, i["traces"], i["spread"]))
        rows.append((name, f"{i['covered']} of {i['traces']} left out", i["covered"], i["traces"]))
    elif r and fit["predicted"]:
        level, sd = r["confidence"]["level"], r["confidence"]["model_error"]
        widen = math.exp(NormalDist().inv_cdf(0.5 + level / 2) * sd)
        held = 0
        for p in fit["predicted"]:
            lo, hi = p["interval"]
            held += lo <= p["recorded"] <= hi
            raw.append((lo * widen, hi / widen, p["recorded"], level))
        rows.append((name, f"{held} of {len(fit['predicted'])} predicted", held, len(fit["predicted"])))
for name, text, _, _ in rows:
    print(f"  {name:28} {text}")
few = [r for r in rows if "predicted" in r[1]]
print(f"  one or two traces fitted, all: {sum(r[2] for r in few)} of {sum(r[3] for r in few)}")
if raw:
    z = NormalDist().inv_cdf(0.5 + raw[0][3] / 2)
    print(f"  one or two traces fitted, {len(raw)} predictions: held, by the model error they are widened by:")
    for sd in (0.0, 0.05, 0.10, 0.15, 0.20):
        w = math.exp(z * sd)
        held = sum(lo / w <= rec <= hi * w for lo, hi, rec, _ in raw)
        print(f"    {100*sd:4.0f}%: {held} of {len(raw)} ({100*held/len(raw):.0f}%)")
if pooled:
    df = sum(n - 1 for _, n, _ in pooled)
    sd = math.sqrt(sum((n - 1) * s * s for _, n, s in pooled) / df)
    print(f"  left-out spreads pooled: {sd:.3f} ({df} degrees of freedom; " +
          ", ".join(f"{name} {s:.3f}" for name, _, s in pooled) + ")")
PY
