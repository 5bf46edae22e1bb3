#!/bin/sh
# Times `slotcron check FILE` and the start-up of `slotcron run FILE` (until its
# "slotcron running" line), with peak memory from /usr/bin/time -v, for BENCHMARKS.md.
#   crates/slotcron-cli/benches/startup.sh BINARY FILE [STATE]   # STATE default memory
# A sqlite STATE is deleted first, so each start-up writes a new file. Times are wall
# clock (m:ss.cc for check, seconds for start-up); check's CPU time (user + system) is
# steadier on a loaded machine.
set -eu
bin=$1 file=$2 state=${3:-memory}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/time -v "$bin" check "$file" > /dev/null 2> "$tmp/check"
check_s=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$tmp/check")
check_kb=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$tmp/check")
check_cpu=$(awk -F': ' '/User time|System time/ { s += $2 } END { printf "%.2f", s }' "$tmp/check")
case $state in sqlite:*) rm -f "${state#sqlite:}" "${state#sqlite:}-wal" "${state#sqlite:}-shm" ;; esac
start=$(date +%s.%N)
/usr/bin/time -v -o "$tmp/run" "$bin" run "$file" --state "$state" 2> "$tmp/log" &
pid=$!
until grep -q "slotcron running" "$tmp/log" 2>/dev/null; do
    if ! kill -0 "$pid" 2>/dev/null; then cat "$tmp/log" >&2; exit 1; fi
    sleep 0.02
done
ready=$(date +%s.%N)
# /usr/bin/time is $pid; the daemon is its child.
pkill -TERM -P "$pid"
wait "$pid" || true
run_kb=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$tmp/run")
lines=$(wc -l < "$tmp/log")
printf '%s %s: check %s wall, %s s CPU, %s MB peak; start-up (%s) %.2f s, %s MB peak, %s log lines\n' \
    "$(basename "$bin")" "$(basename "$file")" "$check_s" "$check_cpu" "$((check_kb / 1024))" "$state" \
    "$(echo "$ready - $start" | bc)" "$((run_kb / 1024))" "$lines"
