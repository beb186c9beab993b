#!/bin/bash
# usage: [WS="16 16 16"] [EXTRA="key=value"] tools/bench/pubsub-runs.sh BIN_DIR
#
# The suite's consumer row several times on one stack, to see how its born-to-received tail
# changes as the stack fills: a name server and an ASYNC_FLUSH broker from BIN_DIR on free
# ports with a store in a temp dir (EXTRA: one more broker.conf line, e.g.
# warmMapedFileEnable=false), an 8-queue topic, 10 s to settle and 2 s of warm-up; then for
# each thread count in WS: `mqbench consumer` (a new group, from the queues' end) with
# `mqbench producer -w <n> -s 1024 --duration 10` beside it, `sync` between runs. Prints
# per run the send TPS and send p99, then the consumer's [Complete] figures. Builds nothing.
set -u
[ $# -eq 1 ] || { sed -n '2p' "$0" >&2; exit 2; }
B=$(cd "$1" && pwd) || exit 2
W=$(mktemp -d "${TMPDIR:-/tmp}/stellmq-pubsub.XXXXXX") || exit 2
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$W"' EXIT
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
nsport=$(free_port); bport=$(free_port)
printf 'listenPort=%s\nkvConfigPath=%s/kv.json\nconfigStorePath=%s/ns.properties\n' "$nsport" "$W" "$W" > "$W/ns.conf"
printf 'brokerName=broker-pubsub\nlistenPort=%s\nbrokerIP1=127.0.0.1\nstorePathRootDir=%s/store\n%s\n' \
  "$bport" "$W" "${EXTRA:-}" > "$W/broker.conf"
"$B/mqnamesrv" -c "$W/ns.conf" > "$W/ns.log" 2>&1 & PIDS+=($!)
NS=127.0.0.1:$nsport; sleep 0.5
"$B/mqbroker" -c "$W/broker.conf" -n "$NS" > "$W/broker.log" 2>&1 & PIDS+=($!)
tries=0
until "$B/mqadmin" updateTopic -n "$NS" -b "127.0.0.1:$bport" -t Bench8 -r 8 -w 8 > /dev/null 2>&1; do
  tries=$((tries + 1)); [ $tries -gt 60 ] && { echo "broker did not start" >&2; cat "$W/broker.log" >&2; exit 1; }
  sleep 0.5
done
sleep 10
"$B/mqbench" producer -n "$NS" -t Bench8 -s 1024 -w 16 --duration 2 > /dev/null 2>&1
sync; sleep 2
run=0
for w in ${WS:-16 16 16}; do
  run=$((run + 1))
  "$B/mqbench" consumer -n "$NS" -t Bench8 -g pubsub_runs_$run --duration 13 --report-interval 3600 > "$W/consumer.out" 2>&1 & c=$!
  sleep 1
  sent=$("$B/mqbench" producer -n "$NS" -t Bench8 -s 1024 -w "$w" --duration 10 --report-interval 3600 2>&1 | tail -1)
  wait $c
  echo "run $run -w $w: $(echo "$sent" | grep -o 'Send TPS: [0-9]*'), send $(echo "$sent" | grep -o 'p99 [0-9.]* ms') | $(tail -1 "$W/consumer.out" | grep -o 'Consume Total.*')"
  sync; sleep 2
done
