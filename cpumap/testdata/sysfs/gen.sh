#!/usr/bin/env bash
# Writes the sysfs fixtures that were NOT captured from a real machine.
# vm2/ was copied from /sys/devices/system/cpu of the 2-vCPU build VM (which
# exposes no cache/ directories) and is not touched here.
#
# Each fixture follows the layout Linux publishes (file names, CPU-list
# format, trailing newlines) for the kind of machine named; the numbering
# schemes are the ones those machines show:
#   desktop-4c8t   Haswell i7-4770-like: 4 cores × 2 threads, siblings
#                  interleaved (0,4 / 1,5 …), private 256K L2, shared 8M L3.
#   server-2s      two sockets × 8 cores × 2 threads, firmware numbering the
#                  sockets alternately (even CPUs socket 0) and siblings +16,
#                  core_id with gaps (0-3, 8-11) as on Xeons with fused-off
#                  cores; private L2, L3 per socket.
#   atom-c2758     D24094's test machine, an Atom C2758 (Silvermont "Avoton"): 8 cores, no
#                  SMT, each pair of cores sharing a 1M L2 module, no L3.
#   hybrid-6p4e    Alder Lake i5-12600K-like: 6 P-cores × 2 threads numbered
#                  adjacently (0,1 / 2,3 …) with private L2, then 4 E-cores
#                  (12-15) sharing one 2M L2 cluster; one L3.
# Run from this directory: ./gen.sh
set -euo pipefail

w() { mkdir -p "$(dirname "$1")"; printf '%s\n' "$2" >"$1"; }

# cache DIR INDEX LEVEL TYPE SIZE SHARED_LIST
cache() {
	local d=$1/cache/index$2
	w "$d/level" "$3"; w "$d/type" "$4"; w "$d/size" "$5"
	w "$d/shared_cpu_list" "$6"; w "$d/coherency_line_size" 64
	w "$d/ways_of_associativity" 8
}

# cpu ROOT ID PKG CORE_ID SIBLINGS PKG_LIST L2_LIST L2_SIZE L3_LIST L3_SIZE
cpu() {
	local d=$1/cpu$2
	w "$d/topology/physical_package_id" "$3"
	w "$d/topology/core_id" "$4"
	w "$d/topology/die_id" 0
	w "$d/topology/thread_siblings_list" "$5"
	w "$d/topology/core_cpus_list" "$5"
	w "$d/topology/core_siblings_list" "$6"
	w "$d/topology/package_cpus_list" "$6"
	cache "$d" 0 1 Data 32K "$5"
	cache "$d" 1 1 Instruction 32K "$5"
	cache "$d" 2 2 Unified "$8" "$7"
	if [ -n "${9:-}" ]; then cache "$d" 3 3 Unified "${10}" "$9"; fi
	[ "$2" = 0 ] || w "$d/online" 1
}

root() { rm -rf "$1"; mkdir -p "$1"; w "$1/online" "$2"; w "$1/possible" "$2"; w "$1/present" "$2"; w "$1/offline" ""; }

# desktop-4c8t
root desktop-4c8t 0-7
for c in 0 1 2 3; do
	for t in 0 1; do
		id=$((c + 4 * t))
		cpu desktop-4c8t $id 0 $c "$c,$((c + 4))" 0-7 "$c,$((c + 4))" 256K 0-7 8192K
	done
done

# server-2s
root server-2s 0-31
coreids=(0 1 2 3 8 9 10 11)
for id in $(seq 0 31); do
	pkg=$((id % 2)); k=$(((id % 16) / 2)); first=$((id % 16))
	if [ $pkg = 0 ]; then plist="0,2,4,6,8,10,12,14,16,18,20,22,24,26,28,30"; else plist="1,3,5,7,9,11,13,15,17,19,21,23,25,27,29,31"; fi
	cpu server-2s $id $pkg ${coreids[$k]} "$first,$((first + 16))" "$plist" "$first,$((first + 16))" 256K "$plist" 20480K
done

# atom-c2758
root atom-c2758 0-7
for id in $(seq 0 7); do
	m=$((id - id % 2))
	cpu atom-c2758 $id 0 $id "$id" 0-7 "$m-$((m + 1))" 1024K
done

# hybrid-6p4e
root hybrid-6p4e 0-15
for id in $(seq 0 11); do
	f=$((id - id % 2))
	cpu hybrid-6p4e $id 0 $((f * 4)) "$f-$((f + 1))" 0-15 "$f-$((f + 1))" 1280K 0-15 20480K
done
for id in 12 13 14 15; do
	cpu hybrid-6p4e $id 0 $((48 + id - 12)) "$id" 0-15 12-15 2048K 0-15 20480K
done
