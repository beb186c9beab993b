#!/bin/bash
# usage: [DURATION=10] [ROUNDS=3] [THREADS=64] [SIZE=1024] [SETTLE=10] [PAUSE=3] \
#        [CONSUME_LIMIT=240] tools/bench/grpc-bench.sh [BIN_DIR]
#
# Issue 16: sends over remoting (`mqbench producer`, straight to the broker) against sends
# through mqproxy (`mqbench grpc-producer`, RocketMQ 5's SendMessage) on one stack, then one
# `mqbench grpc-consumer` reading everything that was sent (a fresh POP group starts at the
# first offset of queues never cleaned). BIN_DIR (default target/release) holds release
# builds of mqnamesrv, mqbroker, mqproxy, mqadmin and mqbench; builds nothing. The name
# server, the broker (ASYNC_FLUSH, store in a temp dir) and the proxy get free ports and are
# stopped, and the temp dir removed, at the end. Topic Bench8 (8 queues), SIZE-byte bodies,
# THREADS workers, DURATION s per run, ROUNDS rounds alternating remoting and gRPC, medians.
# CPU per message: utime+stime of the broker and of the proxy (/proc/<pid>/stat) over the
# run, divided by the run's messages. Hold the cargo lock for it so no build runs beside it
# (flock /tmp/stellmq-cargo.lock tools/bench/grpc-bench.sh). KEEP=1 keeps the temp dir.
set -u
BIN=$(cd "${1:-target/release}" && pwd) || exit 2
DURATION=${DURATION:-10}; ROUNDS=${ROUNDS:-3}; THREADS=${THREADS:-64}; SIZE=${SIZE:-1024}
SETTLE=${SETTLE:-10}; PAUSE=${PAUSE:-3}; CONSUME_LIMIT=${CONSUME_LIMIT:-240}
for f in mqnamesrv mqbroker mqproxy mqadmin mqbench; do
  [ -x "$BIN/$f" ] || { echo "grpc-bench.sh: $BIN/$f missing (cargo build --release)" >&2; exit 2; }
done
$BIN/mqbench grpc-producer --help > /dev/null 2>&1 \
  || { echo "grpc-bench.sh: $BIN/mqbench has no grpc-producer" >&2; exit 2; }
W=$(mktemp -d "${TMPDIR:-/tmp}/stellmq-grpc-bench.XXXXXX") || exit 2
RESULTS=$W/results.tsv; : > "$RESULTS"
HZ=$(getconf CLK_TCK)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  if [ "${KEEP:-0}" = 1 ]; then echo "kept $W" >&2; else rm -rf "$W"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# free_port, cpu_ticks
source "$(dirname "$0")/lib.sh"

field() { # line label -> the number after the label
  echo "$1" | grep -o "$2 [0-9.]*" | head -1 | grep -o '[0-9.]*$'
}

wait_for() { # log pattern pid what
  for _ in $(seq 1 300); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    kill -0 "$3" 2>/dev/null || break
    sleep 0.1
  done
  echo "grpc-bench.sh: $4 did not start, see $1" >&2; KEEP=1; exit 1
}

# The stack.
nsport=$(free_port); bport=$(free_port); pport=$(free_port)
printf 'listenPort=%s\nkvConfigPath=%s/kv.json\nconfigStorePath=%s/ns.properties\n' \
  "$nsport" "$W" "$W" > "$W/ns.conf"
printf 'brokerName=broker-grpc-bench\nlistenPort=%s\nbrokerIP1=127.0.0.1\nstorePathRootDir=%s/store\n' \
  "$bport" "$W" > "$W/broker.conf"
NS=127.0.0.1:$nsport; PROXY=127.0.0.1:$pport
printf '{"namesrvAddr": "%s", "grpcServerPort": %s, "bindAddress": "127.0.0.1"}\n' \
  "$NS" "$pport" > "$W/proxy.json"
"$BIN/mqnamesrv" -c "$W/ns.conf" > "$W/ns.log" 2>&1 & NS_PID=$!; PIDS+=($NS_PID)
wait_for "$W/ns.log" "boot success" $NS_PID "the name server"
"$BIN/mqbroker" -c "$W/broker.conf" -n "$NS" > "$W/broker.log" 2>&1 & BROKER_PID=$!; PIDS+=($BROKER_PID)
wait_for "$W/broker.log" "boot success" $BROKER_PID "the broker"
"$BIN/mqproxy" -n "$NS" --pc "$W/proxy.json" > "$W/proxy.log" 2>&1 & PROXY_PID=$!; PIDS+=($PROXY_PID)
wait_for "$W/proxy.log" "startup successfully" $PROXY_PID "the proxy"
tries=0
until $BIN/mqadmin updateTopic -n "$NS" -c DefaultCluster -t Bench8 -r 8 -w 8 > /dev/null 2>&1; do
  tries=$((tries + 1)); [ $tries -gt 60 ] && { echo "grpc-bench.sh: no topic, see $W" >&2; KEEP=1; exit 1; }
  sleep 0.5
done
sleep "$SETTLE" # the first segments allocated and pre-faulted, the route on the name server
# Warm-up (not recorded, but consumed at the end): routes cached, first pages touched.
WARM=$(timeout 60 $BIN/mqbench producer -n "$NS" -t Bench8 -s "$SIZE" -w 16 --duration 2 \
  --report-interval 3600 2>&1 | tail -1)
WARM2=$(timeout 60 $BIN/mqbench grpc-producer --endpoints "$PROXY" -t Bench8 -s "$SIZE" -w 16 \
  --duration 2 --report-interval 3600 2>&1 | tail -1)
W1=$(field "$WARM" 'Send Total:'); W2=$(field "$WARM2" 'Send Total:')
TOTAL=$(( ${W1:-0} + ${W2:-0} ))
sleep "$PAUSE"

record() { # round mode line broker-ticks proxy-ticks messages
  local cpu
  cpu=$(awk -v b="$4" -v p="$5" -v hz="$HZ" -v x="$6" \
    'BEGIN { if (x > 0) printf "%.2f\t%.2f", b * 1e6 / hz / x, p * 1e6 / hz / x; else printf "nan\tnan" }')
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$(field "$3" "${TPS_LABEL:-Send TPS:}")" \
    "$(field "$3" p50)" "$(field "$3" p99)" "$cpu" >> "$RESULTS"
  echo "$1 [$2] $3 | cpu us/msg broker+proxy: $cpu"
}

run() { # round mode command...
  local round=$1 mode=$2 b0 p0 line sent; shift 2
  b0=$(cpu_ticks $BROKER_PID); p0=$(cpu_ticks $PROXY_PID)
  timeout $((DURATION + 60)) "$@" > "$W/run.out" 2>&1
  line=$(tail -1 "$W/run.out")
  grep '^mqbench:' "$W/run.out" # the first failure of each kind, if any
  record "$round" "$mode" "$line" $(( $(cpu_ticks $BROKER_PID) - b0 )) \
    $(( $(cpu_ticks $PROXY_PID) - p0 )) "$(field "$line" 'Send Total:')"
  sent=$(field "$line" 'Send Total:'); TOTAL=$(( TOTAL + ${sent:-0} ))
  sleep "$PAUSE"
}

echo "# grpc-bench: bin=$BIN DURATION=$DURATION ROUNDS=$ROUNDS THREADS=$THREADS SIZE=$SIZE $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq "$ROUNDS"); do
  run "$round" remoting $BIN/mqbench producer -n "$NS" -t Bench8 -s "$SIZE" -w "$THREADS" \
    --duration "$DURATION" --report-interval 3600
  run "$round" grpc $BIN/mqbench grpc-producer --endpoints "$PROXY" -t Bench8 -s "$SIZE" \
    -w "$THREADS" --duration "$DURATION" --report-interval 3600
done

# Everything sent (warm-ups included), read back through the proxy.
b0=$(cpu_ticks $BROKER_PID); p0=$(cpu_ticks $PROXY_PID)
timeout $((CONSUME_LIMIT + 30)) $BIN/mqbench grpc-consumer --endpoints "$PROXY" -t Bench8 \
  -g grpc_bench_consumer -q "$TOTAL" --duration "$CONSUME_LIMIT" --report-interval 3600 > "$W/run.out" 2>&1
line=$(tail -1 "$W/run.out")
grep '^mqbench:' "$W/run.out"
TPS_LABEL='Consume TPS:' record 1 grpc-consumer "$line" $(( $(cpu_ticks $BROKER_PID) - b0 )) \
  $(( $(cpu_ticks $PROXY_PID) - p0 )) "$(field "$line" 'Consume Total:')"
echo "consumed $(field "$line" 'Consume Total:') of $TOTAL sent"

python3 - "$RESULTS" <<'PY'
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
runs = {}
for rnd, mode, tps, p50, p99, bcpu, pcpu in rows:
    runs.setdefault(mode, []).append([float(x) if x not in ("", "nan") else float("nan")
                                      for x in (tps, p50, p99, bcpu, pcpu)])
def med(mode, i):
    vals = [r[i] for r in runs.get(mode, []) if r[i] == r[i]]
    return statistics.median(vals) if vals else float("nan")
print("\n| Mode | runs | msg/s (median) | p50 ms | p99 ms | broker CPU us/msg | proxy CPU us/msg |")
print("|---|---|---|---|---|---|---|")
for mode in ("remoting", "grpc", "grpc-consumer"):
    if mode in runs:
        print(f"| {mode} | {len(runs[mode])} | {med(mode, 0):,.0f} | {med(mode, 1):.3g} | {med(mode, 2):.3g} | {med(mode, 3):.2f} | {med(mode, 4):.2f} |")
if "remoting" in runs and "grpc" in runs:
    print(f"\ngRPC / remoting msg/s: {med('grpc', 0) / med('remoting', 0):.2f}")
PY
