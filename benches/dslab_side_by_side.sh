#!/usr/bin/env bash
# gridbed beside dslab-dag on the same WfCommons files and platform shape
# (docs/benchmarks.md, "Side by side with dslab-dag"). dslab-dag is built
# from its public repository, never vendored:
#
#   git clone https://github.com/osukhoroslov/dslab ../dslab
#   bash benches/dslab_side_by_side.sh ../dslab
#
# Needs the WfCommons instances (python3 benches/wfcommons_gen.py
# target/wfcommons) and a release build of gridbed. Writes dslab-dag's
# WfFormat 1.4 copies to target/dslab/, builds its dag-benchmark example,
# then runs `gridbed bench dslab` with DSLAB_DAG pointing at it.
set -euo pipefail
cd "$(dirname "$0")/.."
DSLAB=${1:?usage: benches/dslab_side_by_side.sh PATH-TO-DSLAB-CHECKOUT}
(cd "$DSLAB/examples/dag-benchmark" && cargo build --release -q)
BIN="$DSLAB/target/release/dag-benchmark"
mkdir -p target/dslab
for n in 10000 100000; do
    out="target/dslab/epigenomics-$n-v14.json"
    [ -f "$out" ] || python3 benches/wfformat_to_v14.py "target/wfcommons/epigenomics-$n.json" "$out"
done
cargo build --release -q
DSLAB_DAG="$BIN" ./target/release/gridbed bench dslab
