#!/bin/bash
# usage: ab-bench.sh OLD_MQBROKER NEW_MQBROKER [ROUNDS]
# Compares two mqbroker builds in one session: a name server, then each broker in turn on
# its own throwaway store (default ports), alternating, ROUNDS times (default 3); per broker
# four 8 s mqbench producer modes, 1 KiB. Prints "round build [args] tps= p50=" lines; quote
# medians. Needs release builds of mqnamesrv, mqadmin and mqbench in target/release.
set -u
OLD=$1; NEW=$2; ROUNDS=${3:-3}
B=$(cd "$(dirname "$0")/../.." && pwd)/target/release; W=${TMPDIR:-/tmp}/stellmq-abbench
rm -rf $W; mkdir -p $W
$B/mqnamesrv > $W/ns.log 2>&1 & NS=$!
sleep 0.5
for v in old new; do
  printf 'brokerName=broker-a\nlistenPort=10911\nbrokerIP1=127.0.0.1\nstorePathRootDir=%s/%s\n' $W $v > $W/$v.conf
done
for round in $(seq "$ROUNDS"); do
  for v in old new; do
    bin=$OLD; [ $v = new ] && bin=$NEW
    $bin -c $W/$v.conf -n 127.0.0.1:9876 > $W/$v.log 2>&1 & pid=$!
    sleep 3
    $B/mqadmin updateTopic -n 127.0.0.1:9876 -b 127.0.0.1:10911 -t Bench8 -r 8 -w 8 > /dev/null
    sleep 1
    for args in "-w 1" "-w 20" "-w 64 -y true" "-w 8 -b 32"; do
      line=$(timeout 40 $B/mqbench producer -n 127.0.0.1:9876 -t Bench8 -s 1024 --duration 8 $args 2>&1 | tail -1)
      echo "$round $v [$args] tps=$(echo "$line" | grep -o 'Send TPS: [0-9]*' | grep -o '[0-9]*$') p50=$(echo "$line" | grep -o 'p50 [0-9.]*' | grep -o '[0-9.]*$')"
    done
    kill $pid; wait $pid 2>/dev/null; sleep 2
  done
done
kill $NS; wait $NS 2>/dev/null
rm -rf $W
