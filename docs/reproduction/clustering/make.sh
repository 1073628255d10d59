#!/usr/bin/env bash
# Regenerates the tables of docs/reproduction/clustering.md: a real Montage
# run (WfInstances 2mass-02d, 619 tasks) on testbeds/clustering.toml, each
# clustering mode with 60 s and with 0 s of grid overhead per job.
# Run from the repository root, with ../shared/reference beside it.
set -euo pipefail
W=$(realpath "${W:-../shared/reference/wfinstances/montage-chameleon-2mass-02d-001.json}")
cargo build --release --quiet
G=./target/release/gridbed
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
for overhead in 60 0; do
  echo "### $overhead s of grid overhead per job"
  echo
  echo "| clustering | jobs submitted | makespan | vs none |"
  echo "|---|---|---|---|"
  none=""
  for mode in none "horizontal[size=4]" "horizontal[num=8]" "runtime[maxruntime=120]" "runtime[num=8]" label; do
    tb=$TMP/t.toml
    sed -e "s/^overhead = 60 .*/overhead = $overhead/" testbeds/clustering.toml > "$tb"
    if [ "$mode" != none ]; then
      sed -i "s/^strategy = \"round-robin\"/strategy = \"round-robin\"\nclustering = \"$mode\"/" "$tb"
    fi
    out=$($G run "$tb" --sites sites.toml --engine sim -q --workflow "$W" --json "$TMP/r.json")
    makespan=$(python3 -c "import json;print(json.load(open('$TMP/r.json'))['summary']['makespan_s'])")
    jobs=$(python3 -c "import json;print(json.load(open('$TMP/r.json'))['summary']['jobs'])")
    [ -z "$none" ] && none=$makespan
    ratio=$(python3 -c "print(f'{$makespan/$none:.2f}×')")
    printf '| `%s` | %s | %.0f s | %s |\n' "$mode" "$jobs" "$makespan" "$ratio"
  done
  echo
done
