#!/bin/bash
# usage: [LITE_TOPICS=1000000] [SUBSCRIBED=10000] [SAMPLES=1000] tools/bench/lite-bench.sh BIN_DIR
#
# Lite topics at scale (issue #41): starts a name server and a broker (release build dir
# BIN_DIR with mqnamesrv, mqbroker, mqbench) on free ports with a store in a temp dir
# (removed afterwards), runs `mqbench lite` (LITE_TOPICS lite topics of one parent, one
# message each; one client subscribed to SUBSCRIBED of them; SAMPLES messages timed from send
# to receipt), then prints the broker's resident memory, mappings, and the disk and files its
# lite topics' queues take, per lite topic. Then it kills the broker (SIGKILL) and times its
# restart. Builds nothing; hold the cargo lock for it.
set -u
[ $# -eq 1 ] || { sed -n '2p' "$0" >&2; exit 2; }
LITE=${LITE_TOPICS:-1000000}; SUB=${SUBSCRIBED:-10000}; SAMPLES=${SAMPLES:-1000}
W=$(mktemp -d "${TMPDIR:-/tmp}/stellmq-lite.XXXXXX") || exit 2
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
source "$(dirname "$0")/lib.sh"
ulimit -n 65536 2>/dev/null

bin=$(cd "$1" && pwd) || exit 2
for f in mqnamesrv mqbroker mqbench; do
  [ -x "$bin/$f" ] || { echo "lite-bench.sh: $bin/$f missing" >&2; exit 2; }
done
ns_port=$(free_port); broker_port=$(free_port)
printf 'listenPort=%s\nkvConfigPath=%s/kv.json\nconfigStorePath=%s/ns.properties\n' \
  "$ns_port" "$W" "$W" > "$W/ns.conf"
printf 'brokerName=lite\nlistenPort=%s\nbrokerIP1=127.0.0.1\nstorePathRootDir=%s/store\nmaxLiteSubscriptionCount=%s\n' \
  "$broker_port" "$W" "$((SUB + 1000))" > "$W/broker.conf"
"$bin/mqnamesrv" -c "$W/ns.conf" > "$W/ns.log" 2>&1 & ns_pid=$!; PIDS+=($ns_pid)
sleep 0.5
start_broker() {
  "$bin/mqbroker" -c "$W/broker.conf" -n "127.0.0.1:$ns_port" >> "$W/broker.log" 2>&1 &
  broker_pid=$!; PIDS+=($broker_pid)
}
start_broker
wait_quiet 120 "$broker_pid" > /dev/null
echo "# $bin: LITE_TOPICS=$LITE SUBSCRIBED=$SUB SAMPLES=$SAMPLES, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
"$bin/mqbench" lite -n "127.0.0.1:$ns_port" -b "127.0.0.1:$broker_port" \
  --liteTopics "$LITE" --subscribed "$SUB" --samples "$SAMPLES" ||
  echo "lite-bench.sh: mqbench failed (see $W/broker.log)" >&2
rss=$(awk '/VmRSS/ { print $2 }' "/proc/$broker_pid/status")
maps=$(wc -l < "/proc/$broker_pid/maps")
cq="$W/store/consumequeue"
lmq_dirs=$(find "$cq" -maxdepth 1 -name '%LMQ%*' | wc -l)
files=$(find "$cq" -path '*%LMQ%*' -type f | wc -l)
disk_kib=$(du -sk "$cq" | cut -f1)
printf 'broker RSS %d MiB (%.2f KiB per lite topic), %d mappings; %d lite topic queues, %d files, %d MiB on disk (%.1f KiB per lite topic)\n' \
  $((rss / 1024)) "$(echo "$rss / $LITE" | bc -l)" "$maps" "$lmq_dirs" "$files" $((disk_kib / 1024)) \
  "$(echo "$disk_kib / $LITE" | bc -l)"
kill -9 "$broker_pid"; wait "$broker_pid" 2>/dev/null
boots=$(grep -c 'boot success' "$W/broker.log")
started=$(date +%s.%N)
start_broker
for _ in $(seq 6000); do
  [ "$(grep -c 'boot success' "$W/broker.log")" -gt "$boots" ] && break
  sleep 0.1
done
printf 'restart after SIGKILL: broker serving in %.1f s (%s)\n' \
  "$(echo "$(date +%s.%N) - $started" | bc)" \
  "$(grep -o 'queues_from_summary=[a-z]*' "$W/broker.log" | tail -1)"
