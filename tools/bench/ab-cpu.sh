#!/bin/bash
# usage: [DUR=8] [SETTLE=12] [FLUSH=ASYNC_FLUSH] tools/bench/ab-cpu.sh OLD_BIN_DIR NEW_BIN_DIR [ROUNDS] ["mode;mode"]
# Two server builds side by side, alternating, a fresh name server and broker (store in a temp
# dir) per build and round: SETTLE s for the first segment, 2 s warm-up, then for each mode
# (`mqbench producer` args, default "-w 64") DUR s of 1 KiB sends to an 8-queue topic. Prints
# one tab-separated line per run: round build mode msg/s p50 p99 broker-CPU-us/msg (without
# the segment-warming thread) warming-CPU-us/msg mqbench-CPU-us/msg. mqbench and mqadmin come
# from NEW_BIN_DIR. NEW_CONF (e.g. $'metricsExporterType=PROM\nmetricsPromExporterPort=0') is
# appended to the new build's broker.conf. Hold the cargo lock for it (flock /tmp/stellmq-cargo.lock ...).
OLD=$1; NEW=$2; ROUNDS=${3:-3}; MODES=${4:-"-w 64"}; DUR=${DUR:-8}
HZ=$(getconf CLK_TCK)
ticks() { sed 's/.*) //' "$1" | awk '{print $12+$13}'; }
warm_ticks() { for t in /proc/$1/task/*; do [ "$(cat $t/comm)" = stellmq-allocat ] && ticks $t/stat; done | awk '{s+=$1} END {print s+0}'; }
IFS=';' read -ra M <<< "$MODES"
for r in $(seq $ROUNDS); do for v in old new; do
  BIN=$OLD; [ $v = new ] && BIN=$NEW
  D=$(mktemp -d ${TMPDIR:-/tmp}/stellmq-abcpu.XXXX); NSP=$((30000 + RANDOM % 10000)); BP=$((40000 + RANDOM % 10000))
  printf 'listenPort=%s\nkvConfigPath=%s/kv.json\nconfigStorePath=%s/ns.properties\n' $NSP $D $D > $D/ns.conf
  printf 'brokerName=b\nlistenPort=%s\nbrokerIP1=127.0.0.1\nstorePathRootDir=%s/store\nflushDiskType=%s\n' $BP $D ${FLUSH:-ASYNC_FLUSH} > $D/broker.conf
  [ $v = new ] && [ -n "${NEW_CONF:-}" ] && printf '%s\n' "$NEW_CONF" >> $D/broker.conf
  $BIN/mqnamesrv -c $D/ns.conf > $D/ns.log 2>&1 & NSPID=$!
  sleep 0.5
  $BIN/mqbroker -c $D/broker.conf -n 127.0.0.1:$NSP > $D/broker.log 2>&1 & BPID=$!
  until $NEW/mqadmin updateTopic -n 127.0.0.1:$NSP -b 127.0.0.1:$BP -t Bench8 -r 8 -w 8 >/dev/null 2>&1; do sleep 0.5; done
  sleep ${SETTLE:-12}
  timeout 30 $NEW/mqbench producer -n 127.0.0.1:$NSP -t Bench8 -s 1024 -w 16 --duration 2 >/dev/null 2>&1
  sleep 2
  for m in "${M[@]}"; do
    T0=$(ticks /proc/$BPID/stat); W0=$(warm_ticks $BPID)
    /usr/bin/time -f "%U %S" -o $D/time.out $NEW/mqbench producer -n 127.0.0.1:$NSP -t Bench8 -s 1024 --duration $DUR $m > $D/bench.out 2>&1
    T1=$(ticks /proc/$BPID/stat); W1=$(warm_ticks $BPID)
    L=$(grep Complete $D/bench.out)
    N=$(echo "$L" | grep -o 'Send Total: [0-9]*' | grep -o '[0-9]*$'); TPS=$(echo "$L" | grep -o 'Send TPS: [0-9]*' | grep -o '[0-9]*$')
    P50=$(echo "$L" | grep -o 'p50 [0-9.]*' | grep -o '[0-9.]*$'); P99=$(echo "$L" | grep -o 'p99 [0-9.]*' | grep -o '[0-9.]*$')
    BC=$(awk '{print $1+$2}' $D/time.out)
    awk -v r=$r -v v=$v -v m="$m" -v n=$N -v tps=$TPS -v p50=$P50 -v p99=$P99 -v t=$((T1-T0)) -v w=$((W1-W0)) -v bc=$BC -v hz=$HZ 'BEGIN { printf "%s\t%s\t%s\t%s\t%s\t%s\t%.2f\t%.2f\t%.2f\n", r, v, m, tps, p50, p99, (t-w)*1e6/hz/n, w*1e6/hz/n, bc*1e6/n }'
    sleep 2
  done
  kill $BPID $NSPID; wait $BPID $NSPID 2>/dev/null; rm -rf $D
done; done
