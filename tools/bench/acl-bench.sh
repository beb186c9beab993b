#!/bin/bash
# usage: [MODES="produce consume"] [ACL_VERSION=1|2] acl-bench.sh [ROUNDS]
# The cost of the ACL: two stacks side by side, one name server and one broker each,
# the second with aclEnable=true (an account with PUB|SUB on every topic and group, no white
# list, so every request is signed by mqbench and verified by the broker), or with
# ACL_VERSION=2 with ACL 2.0 (authenticationEnabled and authorizationEnabled, a normal user
# allowed Pub,Sub on Topic:* and Sub on Group:*, made with mqadmin createUser/createAcl). Per round four 8 s
# mqbench producer modes, 1 KiB ("produce"), then a consumer alongside 16 sync producer
# threads ("consume"), each run once against each stack, alternating; ROUNDS rounds
# (default 3), with a 5 s pause after each run so that a broker's segment allocator, busy
# after its own run, does not slow the other's. Prints "round acl=off|on [args] tps= p50="
# lines; quote medians. Ports
# 19876/19877 (name servers) and 20909-20912, 20919-20922 (brokers). Needs release builds
# of mqnamesrv, mqbroker, mqadmin and mqbench in target/release.
set -u
ROUNDS=${1:-3}
B=$(cd "$(dirname "$0")/../.." && pwd)/target/release; W=${TMPDIR:-/tmp}/stellmq-aclbench
rm -rf $W; mkdir -p $W/off $W/on/conf
cat > $W/on/conf/plain_acl.yml <<'ACL'
accounts:
  - accessKey: benchUser
    secretKey: benchSecret
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: SUB
  - accessKey: benchAdmin
    secretKey: benchAdminSecret
    admin: true
ACL
start() { # name ns-port broker-port extra
  printf "listenPort=$2\nkvConfigPath=$W/$1/kv.json\nconfigStorePath=$W/$1/ns.properties\n" > $W/$1/ns.conf
  printf "brokerName=broker-$1\nlistenPort=$3\nbrokerIP1=127.0.0.1\nstorePathRootDir=$W/$1/store\n$4" > $W/$1/broker.conf
  $B/mqnamesrv -c $W/$1/ns.conf > $W/$1/ns.log 2>&1 & echo $! >> $W/pids
  sleep 0.5
  $B/mqbroker -c $W/$1/broker.conf -n 127.0.0.1:$2 > $W/$1/broker.log 2>&1 & echo $! >> $W/pids
}
start off 19876 20911 ""
if [ "${ACL_VERSION:-1}" = 2 ]; then
  start on 19877 20921 "authenticationEnabled=true\nauthorizationEnabled=true\ninitAuthenticationUser={\"username\":\"benchAdmin\",\"password\":\"benchAdminSecret\"}\n"
else
  start on 19877 20921 "aclEnable=true\nrocketmqHome=$W/on\n"
fi
sleep 10 # both brokers' first segments allocated and warmed
if [ "${ACL_VERSION:-1}" = 2 ]; then
  A="-n 127.0.0.1:19877 -b 127.0.0.1:20921 --accessKey benchAdmin --secretKey benchAdminSecret"
  $B/mqadmin createUser $A -u benchUser -p benchSecret > /dev/null
  $B/mqadmin createAcl $A -s User:benchUser -r 'Topic:*' -a Pub,Sub -d Allow > /dev/null
  $B/mqadmin createAcl $A -s User:benchUser -r 'Group:*' -a Sub -d Allow > /dev/null
fi
$B/mqadmin updateTopic -n 127.0.0.1:19876 -b 127.0.0.1:20911 -t Bench8 -r 8 -w 8 > /dev/null
$B/mqadmin updateTopic -n 127.0.0.1:19877 -b 127.0.0.1:20921 -t Bench8 -r 8 -w 8 \
  --accessKey benchAdmin --secretKey benchAdminSecret > /dev/null
flags() { # acl
  if [ "$1" = on ]; then echo "-n 127.0.0.1:19877 -a true -ak benchUser -sk benchSecret"; else echo "-n 127.0.0.1:19876"; fi
}
bench() { # acl args...
  local f; f=$(flags $1); shift
  timeout 40 $B/mqbench producer -t Bench8 -s 1024 $f "$@" 2>&1 | tail -1
  sleep 5
}
consume() { # acl: a consumer from the queues' ends while 16 threads send for 8 s
  $B/mqbench consumer -t Bench8 --duration 10 --report-interval 10 $(flags $1) > $W/consumer.out 2>&1 & local c=$!
  sleep 1
  bench $1 --duration 8 -w 16 > /dev/null
  wait $c; tail -1 $W/consumer.out
  sleep 5
}
field() { echo "$1" | grep -o "$2 [0-9.]*" | grep -o '[0-9.]*$'; }
bench off --duration 4 -w 20 > /dev/null; bench on --duration 4 -w 20 > /dev/null # warm-up
for round in $(seq "$ROUNDS"); do
  case " ${MODES:-produce consume} " in *" produce "*)
  for args in "-w 1" "-w 20" "-w 64 -y true" "-w 8 -b 32"; do
    for a in off on; do
      line=$(bench $a --duration 8 $args)
      echo "$round acl=$a [$args] tps=$(field "$line" 'Send TPS:') p50=$(field "$line" p50) failed=$(field "$line" 'Send Failed:')"
    done
  done;; esac
  case " ${MODES:-produce consume} " in *" consume "*)
  for a in off on; do
    line=$(consume $a)
    echo "$round acl=$a [consume, -w 16 sending] consumed=$(field "$line" 'Consume Total:') b2c_p50=$(field "$line" p50)"
  done;; esac
done
grep -h "refused by" $W/on/broker.log | head -3
for p in $(cat $W/pids); do kill $p; done; wait 2>/dev/null
rm -rf $W
