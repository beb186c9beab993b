#!/bin/bash
# usage: syncflush-bench.sh BIN_DIR [mqbench producer args...]
# One SYNC_FLUSH run: a fresh name server and broker (flushDiskType=SYNC_FLUSH) from BIN_DIR
# on ports 19886/20931 with a temp store, 12 s for the first segment to be prepared, an
# 8-queue topic, then `mqbench producer -s 1024` with the given args (e.g. --duration 10 -w 64).
# Prints mqbench's [Complete] line. Alternate two builds' directories to compare them.
set -u
B=$1; shift
W=${TMPDIR:-/tmp}/stellmq-syncflush; rm -rf $W; mkdir -p $W
printf "listenPort=19886\nkvConfigPath=$W/kv.json\nconfigStorePath=$W/ns.properties\n" > $W/ns.conf
printf "brokerName=broker-s\nlistenPort=20931\nbrokerIP1=127.0.0.1\nstorePathRootDir=$W/store\nflushDiskType=SYNC_FLUSH\n" > $W/broker.conf
$B/mqnamesrv -c $W/ns.conf > $W/ns.log 2>&1 & NS=$!
sleep 0.5; $B/mqbroker -c $W/broker.conf -n 127.0.0.1:19886 > $W/broker.log 2>&1 & BR=$!
sleep 12
$B/mqadmin updateTopic -n 127.0.0.1:19886 -b 127.0.0.1:20931 -t Bench8 -r 8 -w 8 > /dev/null
timeout 60 $B/mqbench producer -t Bench8 -s 1024 -n 127.0.0.1:19886 "$@" 2>&1 | tail -1
kill $BR $NS; wait 2>/dev/null
rm -rf $W
