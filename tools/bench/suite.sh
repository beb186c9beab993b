#!/bin/bash
# usage: [DURATION=10] [ROUNDS=3] [BACKLOG=1000000] [SETTLE=10] [PAUSE=3] [TOOLS=dir] \
#        tools/bench/suite.sh OLD_BIN_DIR NEW_BIN_DIR
#
# Issue #15's table, the previous build against this one in one session. OLD_BIN_DIR and
# NEW_BIN_DIR hold release builds of mqnamesrv and mqbroker (e.g. a target/release of each
# commit, see ab-bench.sh; the same directory twice is a noise check). mqbench and mqadmin
# come from TOOLS (default NEW_BIN_DIR) for both builds, so only the servers differ. Builds
# nothing. Every run gets its own name server and broker on free ports with a store in a
# temp dir, removed afterwards:
#   an ASYNC_FLUSH broker: sync sends -w 64; async -w 64 -y true; batches -w 8 -b 32;
#     16 sync sending threads with a consumer alongside (born-to-received p50/p99); and a
#     backlog read: BACKLOG messages written in batches, then read from the first offset
#     (from the page cache, as they were just written);
#   a SYNC_FLUSH broker: sync sends -w 64.
# 1 KiB bodies, topics with 8 queues, DURATION s per run, ROUNDS rounds alternating old and
# new (old, new, old, new ...), medians. Broker CPU per message = utime+stime of the broker
# (/proc/<pid>/stat) over the run, divided by the messages of the run (the consumer row:
# by messages sent, each also delivered; the backlog row: consumption only). A fresh broker
# waits SETTLE s before its first run, and every run is followed by `sync` (the kernel's
# writeback of what the run wrote finished, at most 120 s) and PAUSE s, so that segment
# pre-allocation and writeback after one run do not land in the next (see acl-bench.sh).
# With the defaults the suite takes about 12 minutes. Do not run it beside a build: hold
# the cargo lock for it (flock /tmp/stellmq-cargo.lock tools/bench/suite.sh ...). Per-run
# lines go to stdout as they come, then the table (Markdown). KEEP=1 keeps the temp dir.
# ROWS picks rows (default all: "sync async batch pubsub backlog syncflush"); WARMUP s of
# sends before the first row (default 2; 0 = none, a fresh store's first seconds).
set -u
[ $# -eq 2 ] || { sed -n '2,3p' "$0" >&2; exit 2; }
OLD=$(cd "$1" && pwd) || exit 2
NEW=$(cd "$2" && pwd) || exit 2
TOOLS=$(cd "${TOOLS:-$NEW}" && pwd) || exit 2
DURATION=${DURATION:-10}; ROUNDS=${ROUNDS:-3}; BACKLOG=${BACKLOG:-1000000}
SETTLE=${SETTLE:-10}; PAUSE=${PAUSE:-3}; WARMUP=${WARMUP:-2}
ROWS=" ${ROWS:-sync async batch pubsub backlog syncflush} "
want() { [[ $ROWS == *" $1 "* ]]; }
for f in $OLD/mqnamesrv $OLD/mqbroker $NEW/mqnamesrv $NEW/mqbroker $TOOLS/mqbench $TOOLS/mqadmin; do
  [ -x "$f" ] || { echo "suite.sh: $f missing (build with cargo build --release)" >&2; exit 2; }
done
if ! $TOOLS/mqbench consumer --help | grep -q consumeFromWhere; then
  echo "suite.sh: $TOOLS/mqbench cannot read a backlog (no --consumeFromWhere): set TOOLS" >&2; exit 2
fi
W=$(mktemp -d "${TMPDIR:-/tmp}/stellmq-suite.XXXXXX") || exit 2
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

wait_for_quiet() { # no benchmark beside a compiler
  local waited=0
  while pgrep -x rustc > /dev/null; do
    [ $waited = 0 ] && echo "# waiting for a running build (rustc) to finish" >&2
    waited=1; sleep 10
  done
}

start_stack() { # bin-dir flush-type -> NS, BROKER, BROKER_PID
  local dir=$1 d=$W/stack nsport bport
  rm -rf "$d"; mkdir -p "$d"
  nsport=$(free_port); bport=$(free_port)
  printf 'listenPort=%s\nkvConfigPath=%s/kv.json\nconfigStorePath=%s/ns.properties\n' \
    "$nsport" "$d" "$d" > "$d/ns.conf"
  printf 'brokerName=broker-suite\nlistenPort=%s\nbrokerIP1=127.0.0.1\nstorePathRootDir=%s/store\nflushDiskType=%s\n' \
    "$bport" "$d" "$2" > "$d/broker.conf"
  "$dir/mqnamesrv" -c "$d/ns.conf" > "$d/ns.log" 2>&1 & NS_PID=$!; PIDS+=($NS_PID)
  NS=127.0.0.1:$nsport
  sleep 0.5
  "$dir/mqbroker" -c "$d/broker.conf" -n "$NS" > "$d/broker.log" 2>&1 & BROKER_PID=$!; PIDS+=($BROKER_PID)
  BROKER=127.0.0.1:$bport
  for topic in Bench8 Backlog8; do
    local tries=0
    until $TOOLS/mqadmin updateTopic -n "$NS" -b "$BROKER" -t $topic -r 8 -w 8 > /dev/null 2>&1; do
      tries=$((tries + 1)); [ $tries -gt 60 ] && { echo "suite.sh: broker did not start, see $d" >&2; KEEP=1; exit 1; }
      sleep 0.5
    done
  done
  sleep "$SETTLE" # the first segments allocated and pre-faulted
  # Warm-up (not recorded): routes cached, the first pages of the queues touched.
  if [ "$WARMUP" != 0 ]; then
    timeout 30 $TOOLS/mqbench producer -n "$NS" -t Bench8 -s 1024 -w 16 --duration "$WARMUP" > /dev/null 2>&1
    settle_disk
  fi
}

stop_stack() {
  kill $BROKER_PID; wait $BROKER_PID 2>/dev/null
  kill $NS_PID; wait $NS_PID 2>/dev/null
  PIDS=()
  rm -rf "$W/stack"
}

settle_disk() { # the last run's writeback done (sync), then PAUSE s
  timeout 120 sync
  sleep "$PAUSE"
}

# CPU seconds of the clients (mqbench) this shell has waited for so far. `times` must run in
# this shell, not in a $(...) subshell, which has waited for none of them.
client_times() { times > "$W/times"; }
times_secs() {
  awk 'NR == 2 { split($1, u, /[ms]/); split($2, s, /[ms]/); printf "%.3f", u[1] * 60 + u[2] + s[1] * 60 + s[2] }' "$W/times"
}
client_mark() { client_times; CLIENT0=$(times_secs); } # beside t0: clients' CPU from here on

record() { # round build mode tps p50 p99 ticks messages [note]
  local cpu client now
  client_times; now=$(times_secs)
  cpu=$(awk -v t="$7" -v hz="$HZ" -v x="$8" 'BEGIN { if (x > 0) printf "%.2f", t * 1e6 / hz / x; else print "nan" }')
  client=$(awk -v a="$CLIENT0" -v b="$now" -v x="$8" 'BEGIN { if (x > 0) printf "%.2f", (b - a) * 1e6 / x; else print "nan" }')
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "${4:-0}" "${5:-nan}" "${6:-nan}" "$cpu" "$client" "${9:-}" >> "$RESULTS"
  echo "$1 $2 [$3] msg/s=${4:-0} p50=${5:-?}ms p99=${6:-?}ms cpu_us/msg=$cpu client_cpu_us/msg=$client ${9:-}"
}

producer_run() { # round build mode mqbench-args...
  local round=$1 build=$2 mode=$3 t0 t1 line; shift 3
  t0=$(cpu_ticks $BROKER_PID); client_mark
  line=$(timeout $((DURATION + 30)) $TOOLS/mqbench producer -n "$NS" -t Bench8 -s 1024 \
    --duration "$DURATION" --report-interval 3600 "$@" 2>&1 | tail -1)
  t1=$(cpu_ticks $BROKER_PID)
  record "$round" "$build" "$mode" "$(field "$line" 'Send TPS:')" "$(field "$line" p50)" \
    "$(field "$line" p99)" $((t1 - t0)) "$(field "$line" 'Send Total:')"
  settle_disk
}

pubsub_run() { # round build: 16 sending threads with a consumer (from the end) alongside
  local t0 t1 sent consumed c
  t0=$(cpu_ticks $BROKER_PID); client_mark
  $TOOLS/mqbench consumer -n "$NS" -t Bench8 -g suite_pubsub_$1 --duration $((DURATION + 3)) \
    --report-interval 3600 > "$W/consumer.out" 2>&1 & c=$!
  sleep 1
  sent=$(timeout $((DURATION + 30)) $TOOLS/mqbench producer -n "$NS" -t Bench8 -s 1024 -w 16 \
    --duration "$DURATION" --report-interval 3600 2>&1 | tail -1)
  wait $c
  t1=$(cpu_ticks $BROKER_PID)
  local line; line=$(tail -1 "$W/consumer.out")
  consumed=$(field "$line" 'Consume Total:')
  record "$1" "$2" "produce -w 16 + consumer (born-to-received)" "$(field "$sent" 'Send TPS:')" \
    "$(field "$line" p50)" "$(field "$line" p99)" $((t1 - t0)) "$(field "$sent" 'Send Total:')" \
    "consumed=${consumed:-0}/$(field "$sent" 'Send Total:')"
  settle_disk
}

backlog_run() { # round build: fill Backlog8, then read it all from the first offset
  local filled t0 t1 line
  filled=$(timeout 300 $TOOLS/mqbench producer -n "$NS" -t Backlog8 -s 1024 -w 8 -b 32 \
    -q "$BACKLOG" --duration 0 --report-interval 3600 2>&1 | tail -1)
  filled=$(field "$filled" 'Send Total:')
  settle_disk
  t0=$(cpu_ticks $BROKER_PID); client_mark
  line=$(timeout 300 $TOOLS/mqbench consumer -n "$NS" -t Backlog8 -g suite_backlog_$1 \
    --consumeFromWhere CONSUME_FROM_FIRST_OFFSET -q "${filled:-1}" --duration 240 \
    --report-interval 3600 2>&1 | tail -1)
  t1=$(cpu_ticks $BROKER_PID)
  record "$1" "$2" "consume a backlog (from first offset)" "$(field "$line" 'Consume TPS:')" \
    "" "" $((t1 - t0)) "$(field "$line" 'Consume Total:')" "read=$(field "$line" 'Consume Total:')/${filled:-0}"
  settle_disk
}

echo "# suite: old=$OLD new=$NEW tools=$TOOLS DURATION=$DURATION ROUNDS=$ROUNDS BACKLOG=$BACKLOG $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq "$ROUNDS"); do
  for build in old new; do
    dir=$OLD; [ $build = new ] && dir=$NEW
    want sync || want async || want batch || want pubsub || want backlog || continue
    wait_for_quiet
    start_stack "$dir" ASYNC_FLUSH
    want sync && producer_run "$round" $build "sync -w 64" -w 64
    want async && producer_run "$round" $build "async -w 64 -y true" -w 64 -y true
    want batch && producer_run "$round" $build "batch -w 8 -b 32" -w 8 -b 32
    want pubsub && pubsub_run "$round" $build
    want backlog && backlog_run "$round" $build
    stop_stack
  done
  for build in old new; do
    dir=$OLD; [ $build = new ] && dir=$NEW
    want syncflush || continue
    wait_for_quiet
    start_stack "$dir" SYNC_FLUSH
    producer_run "$round" $build "SYNC_FLUSH sync -w 64" -w 64
    stop_stack
  done
done

python3 - "$RESULTS" <<'PY'
import math, statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
order, runs = [], {}
for rnd, build, mode, tps, p50, p99, cpu, client, note in rows:
    if mode not in order:
        order.append(mode)
    runs.setdefault((mode, build), []).append(
        (float(tps or 0), float(p50), float(p99), float(cpu), float(client)))
def med(mode, build, i):
    vals = [r[i] for r in runs.get((mode, build), []) if not math.isnan(r[i])]
    return statistics.median(vals) if vals else math.nan
def lat(mode, build):
    p50, p99 = med(mode, build, 1), med(mode, build, 2)
    return "-" if math.isnan(p50) else f"{p50:.3g}/{p99:.3g}"
def num(x, fmt):
    return "-" if math.isnan(x) else format(x, fmt)
print()
print("| Mode | old msg/s | new msg/s | ratio | p50/p99 ms old → new | CPU us/msg old | CPU us/msg new | client CPU us/msg new |")
print("|---|---|---|---|---|---|---|---|")
for mode in order:
    old, new = med(mode, "old", 0), med(mode, "new", 0)
    ratio = new / old if old else math.nan
    print(f"| {mode} | {num(old, ',.0f')} | {num(new, ',.0f')} | {num(ratio, '.2f')} | "
          f"{lat(mode, 'old')} → {lat(mode, 'new')} | {num(med(mode, 'old', 3), '.2f')} | "
          f"{num(med(mode, 'new', 3), '.2f')} | {num(med(mode, 'new', 4), '.2f')} |")
n = len({r[0] for r in rows})
print(f"\nmedians of {n} rounds; consumer row: p50/p99 born-to-received; backlog row: no latency")
PY
