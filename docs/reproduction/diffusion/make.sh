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
echo

# Why 1 GB misses less than the paper: in the steady state (after 1,000 s,
# all 64 executors up) the miss rate is 1 - distinct cached files / 10,000,
# so it is set by how many copies the caches hold of each file.
echo "| 1 GB caches | makespan (s) | misses | distinct files cached | copies each | 1 − distinct/10,000 | misses after 1,000 s |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for pol in "good-cache-compute[threshold=0.8]" "max-compute-util"; do
  $G farm $T --cache "1 GB" --policy "$pol" --json "$TMP/r.json" --intervals "$TMP/i.csv" > /dev/null
  python3 - "$pol" "$TMP/r.json" "$TMP/i.csv" <<'PY'
import csv, json, sys
pol, run, rows = sys.argv[1], json.load(open(sys.argv[2]))["sim"], list(csv.DictReader(open(sys.argv[3])))
ss = [r for r in rows if float(r["t_s"]) >= 1000]
mean = lambda k: sum(float(r[k]) for r in ss) / len(ss)
files, copies = mean("cached_files"), mean("cached_copies")
reads = run["local_hits"] + run["global_hits"] + run["misses"]
print(f"| {pol} | {run['makespan']:,.0f} | {100 * run['misses'] / reads:.1f}% | {files:,.0f} | {copies / files:.2f} "
      f"| {100 * (1 - files / 10000):.1f}% | {mean('miss_pct'):.1f}% |")
PY
done
echo

# Falkon's per-task dispatch cost (§5.1: 1,322 decisions/s at worst, 0.76 ms
# a decision), as a latency before each task's reads; 4 GB caches.
sed 's/^peer_latency = 0.5/peer_latency = 0.5\ndispatch = 0.00076/' $T > "$TMP/dispatch.toml"
echo "| 4 GB | no dispatch cost (s) | 0.76 ms a task (s) |"
echo "|---|---:|---:|"
for pol in "good-cache-compute[window=3200, threshold=0.8]" "max-compute-util[window=3200]" "max-cache-hit[window=3200]"; do
  m=()
  for t in $T "$TMP/dispatch.toml"; do
    $G farm "$t" --policy "$pol" --json "$TMP/r.json" > /dev/null
    m+=("$(python3 -c "import json;print(f\"{json.load(open('$TMP/r.json'))['sim']['makespan']:,.1f}\")")")
  done
  printf '| %s | %s | %s |\n' "$pol" "${m[0]}" "${m[1]}"
done
