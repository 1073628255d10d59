#!/usr/bin/env bash
# Regenerates the tables and figures of docs/reproduction/diffusion.md:
# seed 001's LAN experiment set on testbeds/falkon-diffusion.toml (table,
# summary views of figures 4-10, figures 12-15 in set/), then how the
# 4 GB ordering of the dispatch policies depends on the executors' costs.
# Run from the repository root. Simulated: about 2 s a set on a 2-core VM.
set -euo pipefail
cargo build --release --quiet
G=./target/release/gridbed
T=testbeds/falkon-diffusion.toml
D=docs/reproduction/diffusion
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

$G farm $T --experiments $D/set > "$TMP/set.txt"
python3 - "$D/set/summary.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print("| run | makespan (s) | paper (s) | speedup | CPU h (paper) | PI | slowdown | response (s) (paper) | local / global / miss | paper's reads | p99 throughput (Gb/s) |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---|---|---:|")
for r in rows:
    p = lambda k, f="{:,.0f}": f.format(float(r[k])) if r[k] else "—"
    print(f"| {r['run']} | {float(r['makespan_s']):,.0f} | {p('paper_makespan_s')} | {float(r['speedup']):.2f} "
          f"| {float(r['cpu_hours']):.1f} ({p('paper_cpu_hours', '{:g}')}) | {float(r['performance_index']):.2f} "
          f"| {float(r['slowdown']):.2f} | {float(r['response_mean_s']):,.1f} ({p('paper_response_s', '{:g}')}) "
          f"| {float(r['local_pct']):.0f} / {float(r['global_pct']):.0f} / {float(r['miss_pct']):.0f}% | {r['paper_reads']} "
          f"| {float(r['throughput_p99_gbps']):.1f} |")
PY
echo

echo "| disk | peer set-up | good-cache-compute (s) | max-compute-util (s) | max-cache-hit (s) | GCC ≤ MCU ≤ MCH |"
echo "|---|---|---:|---:|---:|---|"
for disk in "none" "200 MB/s" "150 MB/s" "100 MB/s"; do
  for lat in 0 0.5 1; do
    m=()
    for pol in "good-cache-compute[window=3200, threshold=0.8]" "max-compute-util[window=3200]" "max-cache-hit[window=3200]"; do
      $G farm $T --policy "$pol" --disk-bandwidth "$disk" --peer-latency $lat --json "$TMP/r.json" > /dev/null
      m+=("$(python3 -c "import json;print(round(json.load(open('$TMP/r.json'))['sim']['makespan']))")")
    done
    holds=$(python3 -c "g,u,h=${m[0]},${m[1]},${m[2]};print('tie' if max(g,u,h)<1.01*min(g,u,h) else 'yes' if g<=u<=h else 'no')")
    printf '| %s | %s s | %s | %s | %s | %s |\n' "$disk" "$lat" "${m[0]}" "${m[1]}" "${m[2]}" "$holds"
  done
done
