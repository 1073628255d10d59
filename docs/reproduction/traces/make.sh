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
  echo "## $1 + $2 (default: job_start_delay, negotiator_interval, postscript_overhead)"
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
