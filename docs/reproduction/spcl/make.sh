#!/usr/bin/env bash
# Regenerates the tables and charts of docs/reproduction/spcl.md: seed 000's
# four strategies on the first 5-25 Grid3 sites at MAXPRE 20/40/60 (figures
# 4-7), what each modelling choice does (the data layout, when the RLS learns
# of a staged copy), where the extra transfers at 25 sites go, the 5% sample,
# and the two live runs against the simulator. Run from the repository root;
# prints the page's tables (about 20 minutes on 2 cores).
set -euo pipefail
cargo build --release --quiet
G=./target/release/gridbed
T=testbeds/spcl-grid3.toml
D=docs/reproduction/spcl
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

tables() { # sweep.csv [maxpre...] -> transfers and makespan rows, SPCL against the next best
  python3 - "$@" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
maxpres = sys.argv[2:] or sorted({r["maxpre"] for r in rows}, key=int)
names = ["random", "random-caching", "clustered", "data-present"]
cell = {(r["strategy"], int(r["sites"]), r["maxpre"]): r for r in rows}
sites = sorted({int(r["sites"]) for r in rows})
def best_other(n, mp, key):
    return min((float(cell[(s, n, mp)][key]), s) for s in names if s != "clustered")
print("| sites | Random | RandomCaching | Clustered | DataPresent | Clustered fewer than the next best |")
print("|---:|---:|---:|---:|---:|---:|")
mp = maxpres[0]
for n in sites:
    t = [int(cell[(s, n, mp)]["transfers"]) for s in names]
    other, who = best_other(n, mp, "transfers")
    print(f"| {n} | " + " | ".join(f"{x:,}" for x in t) + f" | {100 * (1 - t[2] / other):.0f}% ({who}) |")
print()
print("| sites | MAXPRE | Random | RandomCaching | Clustered | DataPresent | Clustered faster than the next best |")
print("|---:|---:|---:|---:|---:|---:|---:|")
for mp in maxpres:
    for n in sites:
        h = [float(cell[(s, n, mp)]["makespan_s"]) / 3600 for s in names]
        other, who = best_other(n, mp, "makespan_s")
        print(f"| {n} | {mp} | " + " | ".join(f"{x:.1f}" for x in h) + f" | {100 * (1 - h[2] * 3600 / other):+.0f}% ({who}) |")
PY
}

echo "### The workflow"
$G workflow stats $T
echo
echo "### Figures 4-7: the paper's configuration (60 runs)"
# Into a new folder (sweep refuses a full one), then beside this script.
$G sweep $T --out "$TMP/main" -q > /dev/null
cp "$TMP/main"/*.csv "$TMP/main"/*.svg $D/
tables $D/sweep.csv
echo
echo "### Ablation: replicas registered on arrival instead of in the postscript (MAXPRE 20)"
sed '/^registration = "postscript"/d' $T > "$TMP/arrival.toml"
$G sweep "$TMP/arrival.toml" --maxpre 20 --out "$TMP/arrival" -q > /dev/null
tables "$TMP/arrival/sweep.csv"
echo
echo "### Ablation: the sliding file layout (block = [0, 0]), postscript registration (MAXPRE 20)"
sed 's/^generator = "coadd"/generator = "coadd"\nblock = [0, 0]/' $T > "$TMP/sliding.toml"
$G workflow stats "$TMP/sliding.toml" | grep references
$G sweep "$TMP/sliding.toml" --maxpre 20 --out "$TMP/sliding" -q > /dev/null
tables "$TMP/sliding/sweep.csv"
echo
echo "### Where Clustered's extra transfers at 25 sites go"
$G run $T --engine sim -q --db "$TMP/c25.db" > /dev/null
python3 - "$TMP/c25.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print("| site | CPUs | jobs | staging attempts that failed for room | transfers in them | transfers in attempts that ran |")
print("|---|---:|---:|---:|---:|---:|")
q = """select s.name, s.cpus, sum(a.outcome = 'ended'),
              sum(a.outcome != 'ended'), sum(case when a.outcome != 'ended' then a.transfers else 0 end),
              sum(case when a.outcome = 'ended' then a.transfers else 0 end)
       from attempts a join sites s on s.id = a.site group by a.site order by 4 desc limit 4"""
for name, cpus, jobs, failed, tf, tok in db.execute(q):
    print(f"| {name} | {cpus} | {jobs} | {failed:,} | {tf:,} | {tok:,} |")
pairs = db.execute("select count(*) from (select distinct file, destination from transfers where failure is null)").fetchone()[0]
total = db.execute("select count(*) from transfers where failure is null").fetchone()[0]
print(f"\n{total:,} transfers, {pairs:,} distinct (file, site) pairs")
PY
echo
echo "### The 5% sample (spcl-live-4, sim)"
for s in random clustered "clustered[sequence=false]" data-present; do
  printf '%s: ' "$s"
  $G run testbeds/spcl-live-4.toml --engine sim -q --strategy "$s" | grep -E '^  (makespan|transfers) ' | tr -s ' ' | tr '\n' ' '
  echo
done
sed 's/^sample = 0.05/ra = 37/' testbeds/spcl-live-4.toml > "$TMP/strip.toml"
for s in random clustered; do
  printf 'contiguous 5%% strip, %s: ' "$s"
  $G run "$TMP/strip.toml" --engine sim -q --strategy "$s" | grep -E '^  makespan ' | tr -s ' '
done
echo
echo "### Live against sim"
$G validate testbeds/spcl-live-10.toml | tail -14
$G validate testbeds/spcl-live-10.toml --strategy clustered | tail -14
$G validate testbeds/spcl-live-4.toml | tail -14
