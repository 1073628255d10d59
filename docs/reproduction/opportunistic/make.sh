#!/usr/bin/env bash
# Regenerates the tables and charts of docs/reproduction/opportunistic.md:
# seed 002's five selectors on testbeds/osg-12-pipeline.toml, 20 seeds each,
# with the paper's pairing (MonitQueue with Opportunistic only; VDS's
# replica deletion for all), then what each half of the pairing does, then
# live against sim. Run from the repository root.
set -euo pipefail
cargo build --release --quiet
G=./target/release/gridbed
T=testbeds/osg-12-pipeline.toml
D=docs/reproduction/opportunistic
S=opportunistic,weighted-linear-random,round-robin,last-recent-used,"data-present[caching=false]"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

table() { # summary.csv -> markdown rows, "better by" against opportunistic
  python3 - "$1" <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1]))]
opp = next(float(r["mean_s"]) for r in rows if r["strategy"] == "opportunistic")
print("| strategy | mean makespan | sd | 95% CI | speedup over 1 CPU | Opportunistic better by |")
print("|---|---:|---:|---:|---:|---:|")
for r in sorted(rows, key=lambda r: float(r["mean_s"])):
    m = float(r["mean_s"])
    better = "—" if r["strategy"] == "opportunistic" else f"{100 * (m / opp - 1):.0f}%"
    print(f"| {r['strategy']} | {m / 60:.1f} min | {float(r['sd_s']) / 60:.1f} | ± {float(r['ci95_s']) / 60:.1f} | {float(r['speedup']):.1f} | {better} |")
PY
}

echo "### The paper's pairing"
# Into a new folder (sweep refuses a full one), then beside this script.
$G sweep $T --strategies "$S" --sites 12 --maxpre 20 --repeat 20 \
  --monitqueue-for opportunistic --out "$TMP/main" -q > /dev/null
cp "$TMP/main"/*.csv "$TMP/main"/*.svg $D/
table $D/summary.csv
echo
echo "### MonitQueue for every strategy (replica deletion kept)"
$G sweep $T --strategies "$S" --sites 12 --maxpre 20 --repeat 20 --out "$TMP/all" -q > /dev/null
table "$TMP/all/summary.csv"
echo
echo "### Caching instead of deletion (MonitQueue with Opportunistic only)"
sed 's/^replica_policy = "delete"/replica_policy = "caching"/' $T > "$TMP/caching.toml"
$G sweep "$TMP/caching.toml" --strategies "$S" --sites 12 --maxpre 20 --repeat 20 \
  --monitqueue-for opportunistic --out "$TMP/caching" -q > /dev/null
table "$TMP/caching/summary.csv"
echo
echo "### Live against sim (Opportunistic, seed 1)"
$G validate $T | tail -12
