#!/bin/bash
# usage: ha-bench.sh ROLE  (SYNC_MASTER | ASYNC_MASTER | NONE)
# Runs name server, master (and a slave unless ROLE=NONE) on the default ports with throwaway
# stores, 10 s of mqbench producer (20 threads, 1 KiB), then haStatus. Needs release builds.
set -u
ROLE=$1; B=$(cd "$(dirname "$0")/../.." && pwd)/target/release; W=${TMPDIR:-/tmp}/stellmq-habench; rm -rf $W; mkdir -p $W
$B/mqnamesrv > $W/ns.log 2>&1 & NS=$!
sleep 0.5
cat > $W/m.conf <<EOC
brokerName=broker-a
brokerId=0
brokerRole=${ROLE/NONE/ASYNC_MASTER}
listenPort=10911
storePathRootDir=$W/m
EOC
cat > $W/s.conf <<EOC
brokerName=broker-a
brokerId=1
brokerRole=SLAVE
listenPort=11011
storePathRootDir=$W/s
EOC
$B/mqbroker -n 127.0.0.1:9876 -c $W/m.conf > $W/m.log 2>&1 & M=$!
S=
if [ "$ROLE" != NONE ]; then $B/mqbroker -n 127.0.0.1:9876 -c $W/s.conf > $W/s.log 2>&1 & S=$!; fi
sleep 2
$B/mqadmin updateTopic -n 127.0.0.1:9876 -b 127.0.0.1:10911 -t Bench8 -r 8 -w 8 > /dev/null
sleep 1
$B/mqbench producer -n 127.0.0.1:9876 -t Bench8 -s 1024 -w 20 --duration 10 2>&1 | tail -3
$B/mqadmin haStatus -n 127.0.0.1:9876 -b 127.0.0.1:10911 2>&1 | head -5
kill $M $S 2>/dev/null; sleep 1; kill $NS; wait 2>/dev/null
grep -c " ERROR " $W/*.log
rm -rf $W
