#!/bin/bash
# usage: [TOPICS=100000] [GROUP_COUNT=0] [WINDOW=10000] [SAMPLE=500] tools/bench/metadata-bench.sh BIN_DIR...
#
# What a topic change costs as a broker's table grows (issue #38): for each release build
# dir given (holding mqnamesrv, mqbroker, mqbench), starts a name server and a broker on free
# ports with a store in a temp dir (removed afterwards), runs `mqbench metadata` (TOPICS
# topics of 4 queues created one by one, then GROUP_COUNT groups; the median and p99 per WINDOW
# of table size; SAMPLE updates and deletions at the full size), and prints the broker's
# resident memory, CPU time and the size of its config directory at the end. Builds nothing;
# hold the cargo lock for it.
set -u
[ $# -ge 1 ] || { sed -n '2p' "$0" >&2; exit 2; }
TOPICS=${TOPICS:-100000}; GROUPS_N=${GROUP_COUNT:-0}; WINDOW=${WINDOW:-10000}; SAMPLE=${SAMPLE:-500}
W=$(mktemp -d "${TMPDIR:-/tmp}/stellmq-metadata.XXXXXX") || exit 2
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
source "$(dirname "$0")/lib.sh"
HZ=$(getconf CLK_TCK)

n=0
for bin in "$@"; do
  bin=$(cd "$bin" && pwd) || exit 2
  for f in mqnamesrv mqbroker mqbench; do
    [ -x "$bin/$f" ] || { echo "metadata-bench.sh: $bin/$f missing" >&2; exit 2; }
  done
  n=$((n + 1)); dir=$W/$n; mkdir -p "$dir"
  ns_port=$(free_port); broker_port=$(free_port)
  printf 'listenPort=%s\nkvConfigPath=%s/kv.json\nconfigStorePath=%s/ns.properties\n' \
    "$ns_port" "$dir" "$dir" > "$dir/ns.conf"
  printf 'brokerName=meta\nlistenPort=%s\nbrokerIP1=127.0.0.1\nstorePathRootDir=%s/store\n' \
    "$broker_port" "$dir" > "$dir/broker.conf"
  "$bin/mqnamesrv" -c "$dir/ns.conf" > "$dir/ns.log" 2>&1 & ns_pid=$!; PIDS+=($ns_pid)
  sleep 0.5
  "$bin/mqbroker" -c "$dir/broker.conf" -n "127.0.0.1:$ns_port" > "$dir/broker.log" 2>&1 &
  broker_pid=$!; PIDS+=($broker_pid)
  wait_quiet 120 "$broker_pid" > /dev/null
  echo "# $bin: TOPICS=$TOPICS GROUP_COUNT=$GROUPS_N $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
  t0=$(cpu_ticks "$broker_pid"); n0=$(cpu_ticks "$ns_pid"); started=$(date +%s.%N)
  "$bin/mqbench" metadata -n "127.0.0.1:$ns_port" -b "127.0.0.1:$broker_port" \
    --topics "$TOPICS" --groups "$GROUPS_N" --window "$WINDOW" --sample "$SAMPLE" ||
    echo "metadata-bench.sh: mqbench failed (see $dir/broker.log)" >&2
  elapsed=$(echo "$(date +%s.%N) - $started" | bc)
  t1=$(cpu_ticks "$broker_pid"); n1=$(cpu_ticks "$ns_pid")
  rss=$(awk '/VmRSS/ { print $2 }' "/proc/$broker_pid/status")
  ns_rss=$(awk '/VmRSS/ { print $2 }' "/proc/$ns_pid/status")
  printf 'wall %.1f s, broker CPU %.1f s, name server CPU %.1f s, broker RSS %d MiB, name server RSS %d MiB, config dir %s\n' \
    "$elapsed" "$(echo "($t1 - $t0) / $HZ" | bc -l)" "$(echo "($n1 - $n0) / $HZ" | bc -l)" \
    $((rss / 1024)) $((ns_rss / 1024)) "$(du -sh "$dir/store/config" | cut -f1)"
  kill "$broker_pid" "$ns_pid" 2>/dev/null; wait "$broker_pid" "$ns_pid" 2>/dev/null
  rm -rf "$dir/store"
done
