#!/usr/bin/env bash
# The transfer patterns of testbeds/network/ on every engine (issue 37's
# validation table, docs/benchmarks.md): the simulator against live
# (governor, each testbed as shipped) and against the kernel (a netbed,
# root; 1 nominal second = 1 real second and files of megabytes, since
# TCP shares a tbf over seconds, not over the few round trips of a small
# file), each transfer matched by job, file and receiver.
#
#   cargo build --release
#   sudo bash benches/network_patterns.sh            # live and kernel
#   bash benches/network_patterns.sh --live-only      # no root: live only
#
# SimGrid's side is benches/simgrid_network.py.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BIN="$ROOT/target/release/gridbed"
KERNEL=1
[ "${1:-}" = "--live-only" ] && KERNEL=0
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
port=7300
# The kernel's copy of a pattern: unscaled in time; the all-to-all's 4.5 GB
# would be CPU-bound on a small machine, so its bytes are scaled by 10 (5 MB
# files); the campuses' shortest transfers (0.25 s, ramping up to 40 MB/s
# through three shaped hops) run 4 times slower; the coadd's corner (374
# nominal seconds) runs 10 times faster, its 5 MB images as 500 kB.
# EFFICIENCY, when set, goes in as the testbed's `[network]
# protocol_efficiency`.
kernel_copy() {
    local name=$1 bytes=1 time=1
    case "$name" in
        all-to-all) bytes=10 ;;
        campuses) time=0.25 ;;
        coadd-hot) bytes=10; time=10 ;;
    esac
    sed -e "s/^time_scale = .*/time_scale = $time/" -e "s/^byte_scale = .*/byte_scale = $bytes/" \
        -e "s|sites_file = \"../../sites.toml\"|sites_file = \"$ROOT/sites.toml\"|" \
        "testbeds/network/$name.toml" > "$WORK/$name.toml"
    if [ -n "${EFFICIENCY:-}" ]; then
        printf '\n[network]\nprotocol_efficiency = %s\n' "$EFFICIENCY" >> "$WORK/$name.toml"
    fi
    echo "time_scale $time, byte_scale $bytes"
}
# validate --netbed of the kernel's copy of pattern $1.
on_kernel() {
    local name=$1 scales
    scales=$(kernel_copy "$name")
    "$BIN" netbed up "$WORK/$name.toml" --dir "$WORK/nb-$name" --port $port > /dev/null
    "$BIN" validate "$WORK/$name.toml" --netbed "$WORK/nb-$name" -q | sed -n '/^shaping/,$p' \
        | sed "s/^live, kernel qdiscs (netbed)/live, kernel ($scales)/" || true
    "$BIN" netbed down --dir "$WORK/nb-$name" > /dev/null
    port=$((port + 1))
}
if [ "$KERNEL" = 1 ]; then
    # The protocols' share of the kernel's rates, fitted on the fan-in
    # (one direction, long transfers) and then used on every pattern.
    echo "## fitting protocol_efficiency on fan-in"
    on_kernel fan-in > "$WORK/fit.txt"
    cat "$WORK/fit.txt"
    fit=$(sed -n 's/.*protocol_efficiency = \([0-9.]*\)` fits.*/\1/p' "$WORK/fit.txt")
    export EFFICIENCY=$fit
    echo "fitted: $EFFICIENCY"
fi
for tb in testbeds/network/*.toml; do
    name=$(basename "$tb" .toml)
    echo "## $name"
    "$BIN" validate "$tb" -q | sed -n '/^shaping/,$p'
    [ "$KERNEL" = 1 ] || continue
    on_kernel "$name"
done
