#!/bin/bash
# usage: [DURATION=8] [ROUNDS=5] [MODES="-w 64|-w 64 -y true"] tools/bench/pair.sh OLD_BIN_DIR NEW_BIN_DIR
#
# Two complete builds side by side, client included: where suite.sh keeps mqbench fixed to
# compare servers, this runs each build's own mqbench against its own name server and broker,
# so client-side changes count too. OLD_BIN_DIR and NEW_BIN_DIR hold release builds of
# mqnamesrv, mqbroker, mqadmin and mqbench. Builds nothing. One stack per build, both started
# up front on free ports with stores in a temp dir (removed afterwards), waited for until both
# brokers are idle (one message sent, their first two segments pre-faulted, at most 180 s),
# then ROUNDS rounds of every mode, old and new alternating. 1 KiB bodies, a topic with 8
# queues, DURATION s per run.
# Per run: msg/s, p99, broker CPU per message (utime+stime from /proc/<pid>/stat over the
# run) and client CPU per message (mqbench's user+system time); then medians per mode and
# build. Hold the cargo lock for it (flock /tmp/stellmq-cargo.lock tools/bench/pair.sh ...).
set -u
[ $# -eq 2 ] || { sed -n '2p' "$0" >&2; exit 2; }
OLD=$(cd "$1" && pwd) || exit 2
NEW=$(cd "$2" && pwd) || exit 2
DURATION=${DURATION:-8}; ROUNDS=${ROUNDS:-5}
IFS='|' read -r -a MODE_LIST <<< "${MODES:--w 64|-w 64 -y true}"
for d in $OLD $NEW; do
  for f in mqnamesrv mqbroker mqadmin mqbench; do
    [ -x "$d/$f" ] || { echo "pair.sh: $d/$f missing (cargo build --release)" >&2; exit 2; }
  done
done
W=$(mktemp -d "${TMPDIR:-/tmp}/stellmq-pair.XXXXXX") || exit 2
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
HZ=$(getconf CLK_TCK)

# free_port, cpu_ticks
source "$(dirname "$0")/lib.sh"

declare -A NS BROKER
start_stack() { # build-name bin-dir
  local dir=$W/$1 ns_port broker_port
  mkdir -p "$dir"
  ns_port=$(free_port); broker_port=$(free_port)
  printf 'listenPort=%s\nkvConfigPath=%s/kv.json\nconfigStorePath=%s/ns.properties\n' \
    "$ns_port" "$dir" "$dir" > "$dir/ns.conf"
  printf 'brokerName=pair-%s\nlistenPort=%s\nbrokerIP1=127.0.0.1\nstorePathRootDir=%s/store\n' \
    "$1" "$broker_port" "$dir" > "$dir/broker.conf"
  "$2/mqnamesrv" -c "$dir/ns.conf" > "$dir/ns.log" 2>&1 & PIDS+=($!)
  sleep 0.5
  "$2/mqbroker" -c "$dir/broker.conf" -n "127.0.0.1:$ns_port" > "$dir/broker.log" 2>&1 &
  BROKER[$1]=$!; PIDS+=($!)
  NS[$1]=127.0.0.1:$ns_port
  for _ in $(seq 60); do
    "$2/mqadmin" updateTopic -n "${NS[$1]}" -b "127.0.0.1:$broker_port" -t Bench8 -r 8 -w 8 \
      > /dev/null 2>&1 && return 0
    sleep 0.5
  done
  echo "pair.sh: the $1 broker did not start (see $dir/broker.log)" >&2; exit 1
}
start_stack old "$OLD"
start_stack new "$NEW"
# Both brokers pre-fault their first segment at start and the next one once the first is
# taken by an append; measuring before they are done would charge it to whichever build
# runs first. One message each takes the first segment.
for build in old new; do
  bin=$OLD; [ $build = new ] && bin=$NEW
  "$bin/mqbench" producer -n "${NS[$build]}" -t Bench8 -s 1024 -w 1 -q 1 > /dev/null 2>&1
done
settled=$(wait_quiet 180 "${BROKER[old]}" "${BROKER[new]}") ||
  echo "pair.sh: the brokers were still busy after ${settled} s; measuring anyway" >&2

RESULTS=$W/results.tsv; : > "$RESULTS"
echo "# pair: old=$OLD new=$NEW DURATION=$DURATION ROUNDS=$ROUNDS $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), settled after ${settled} s"
for round in $(seq "$ROUNDS"); do
  for mode in "${MODE_LIST[@]}"; do
    for build in old new; do
      bin=$OLD; [ $build = new ] && bin=$NEW
      t0=$(cpu_ticks "${BROKER[$build]}")
      # shellcheck disable=SC2086 # the mode is a list of mqbench arguments
      /usr/bin/time -f "%U %S" -o "$W/time" "$bin/mqbench" producer -n "${NS[$build]}" -t Bench8 \
        -s 1024 --duration "$DURATION" --report-interval 3600 $mode > "$W/out" 2>&1
      t1=$(cpu_ticks "${BROKER[$build]}")
      line=$(grep Complete "$W/out")
      total=$(sed -n 's/.*Send Total: \([0-9]*\).*/\1/p' <<< "$line")
      tps=$(sed -n 's/.*Send TPS: \([0-9]*\).*/\1/p' <<< "$line")
      p99=$(sed -n 's/.*p99 \([0-9.]*\) ms.*/\1/p' <<< "$line")
      read -r user sys < "$W/time"
      awk -v r="$round" -v m="$mode" -v b=$build -v t="${total:-0}" -v tps="${tps:-0}" \
        -v p="${p99:-?}" -v ticks=$((t1 - t0)) -v u="$user" -v s="$sys" -v hz="$HZ" 'BEGIN {
          t = (t > 0) ? t : 1
          printf "%s\t%s\t%s\t%d\t%s\t%.2f\t%.2f\n", r, m, b, tps, p, ticks / hz * 1e6 / t, (u + s) * 1e6 / t
        }' | tee -a "$RESULTS" | awk -F'\t' '{ printf "%s %s [%s] msg/s=%s p99=%sms broker_us/msg=%s client_us/msg=%s\n", $1, $3, $2, $4, $5, $6, $7 }'
      sync; sleep 2
    done
  done
done

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
col() { awk -F'\t' -v m="$1" -v b="$2" -v c="$3" '$2 == m && $3 == b { print $c }' "$RESULTS" | median; }
echo
echo "| Mode | old msg/s | new msg/s | ratio | p99 ms old → new | broker us/msg old → new | client us/msg old → new |"
echo "|---|---|---|---|---|---|---|"
for mode in "${MODE_LIST[@]}"; do
  ot=$(col "$mode" old 4); nt=$(col "$mode" new 4)
  awk -v m="$mode" -v ot="$ot" -v nt="$nt" -v op="$(col "$mode" old 5)" -v np="$(col "$mode" new 5)" \
    -v ob="$(col "$mode" old 6)" -v nb="$(col "$mode" new 6)" \
    -v oc="$(col "$mode" old 7)" -v nc="$(col "$mode" new 7)" 'BEGIN {
      printf "| %s | %d | %d | %.2f | %s → %s | %.2f → %.2f (%.2f) | %.2f → %.2f (%.2f) |\n",
        m, ot, nt, (ot > 0 ? nt / ot : 0), op, np, ob, nb, (ob > 0 ? nb / ob : 0), oc, nc, (oc > 0 ? nc / oc : 0)
    }'
done
echo
echo "medians of $ROUNDS rounds; each build's own mqbench"
