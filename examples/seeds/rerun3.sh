#!/usr/bin/env bash
# Runs the main job three times back to back on this machine and sets the
# verdicts side by side: the check that every verdict survives a rerun
# (docs/seeds.md, "Reruns"). Not run in CI: it takes three full runs, 6–10
# minutes on 2 CPUs.
#
#   examples/seeds/rerun3.sh [DIR] [-- FLAGS...]
#
# DIR (default $TMPDIR/seeds-rerun-<time>) receives the binary, run{1,2,3}.json,
# run{1,2,3}.txt (stdout) and run{1,2,3}.err (progress); FLAGS go to every
# run. The exit status is that of `seeds -compare`: 0 when every review got
# the same verdict in all three runs, 3 when one differs.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${TMPDIR:-/tmp}/seeds-rerun-$(date -u +%Y%m%dT%H%M%SZ)
if [ $# -gt 0 ] && [ "$1" != "--" ]; then
	dir=$1
	shift
fi
if [ $# -gt 0 ] && [ "$1" = "--" ]; then
	shift
fi
mkdir -p "$dir"
go build -o "$dir/seeds" ./examples/seeds
for i in 1 2 3; do
	echo "== run $i of 3 ($(date -u +%H:%M:%SZ), load average $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown))"
	"$dir/seeds" -json "$dir/run$i.json" -svg "$dir/charts$i" "$@" >"$dir/run$i.txt" 2>"$dir/run$i.err"
	sed -n '/^== summary/,$p' "$dir/run$i.txt"
done
echo "== the three runs side by side"
exec "$dir/seeds" -compare "$dir/run1.json" "$dir/run2.json" "$dir/run3.json"
