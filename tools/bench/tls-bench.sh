#!/bin/bash
# usage: [MODES="produce consume"] tls-bench.sh [ROUNDS]
# The cost of TLS: one name server and one broker in tlsMode=permissive (plaintext and TLS
# on the same ports, so both are measured against the same processes), and per round four
# 8 s mqbench producer modes, 1 KiB ("produce"), then a consumer alongside 16 sync producer
# threads ("consume"), each run once in plaintext and once with --tlsTrustCertPath,
# alternating; ROUNDS rounds (default 3). Prints "round tls=off|on [args] tps= p50=" lines
# (for "consume": messages consumed in the 8 s and born-to-received p50); quote medians. Ports 19876 (name server) and
# 20909-20912 (broker), so a stack on the default ports is left alone. Needs release builds
# of mqnamesrv, mqbroker, mqadmin and mqbench in target/release, and openssl for the
# throwaway certificates.
set -u
ROUNDS=${1:-3}
B=$(cd "$(dirname "$0")/../.." && pwd)/target/release; W=${TMPDIR:-/tmp}/stellmq-tlsbench
NS=127.0.0.1:19876
rm -rf $W; mkdir -p $W
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
  -subj /CN=bench-ca -keyout $W/ca.key -out $W/ca.pem 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=127.0.0.1 \
  -keyout $W/server.key -out $W/server.csr 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\n' > $W/san.ext
openssl x509 -req -in $W/server.csr -CA $W/ca.pem -CAkey $W/ca.key -CAcreateserial -days 2 \
  -extfile $W/san.ext -out $W/server.pem 2>/dev/null
tls="tlsMode=permissive\ntls.server.certPath=$W/server.pem\ntls.server.keyPath=$W/server.key\n"
printf "listenPort=19876\nkvConfigPath=$W/kv.json\nconfigStorePath=$W/ns.properties\n$tls" > $W/ns.conf
printf "brokerName=broker-a\nlistenPort=20911\nbrokerIP1=127.0.0.1\nstorePathRootDir=$W/store\n$tls" > $W/broker.conf
$B/mqnamesrv -c $W/ns.conf > $W/ns.log 2>&1 & nspid=$!
sleep 0.5
$B/mqbroker -c $W/broker.conf -n $NS > $W/broker.log 2>&1 & brpid=$!
sleep 3
$B/mqadmin updateTopic -n $NS -b 127.0.0.1:20911 -t Bench8 -r 8 -w 8 > /dev/null
bench() { # tls args...
  local flags=""; [ "$1" = on ] && flags="--tlsTrustCertPath $W/ca.pem"; shift
  timeout 40 $B/mqbench producer -n $NS -t Bench8 -s 1024 $flags "$@" 2>&1 | tail -1
}
consume() { # tls: a consumer from the queues' ends while 16 threads send for 8 s
  local flags=""; [ "$1" = on ] && flags="--tlsTrustCertPath $W/ca.pem"
  $B/mqbench consumer -n $NS -t Bench8 --duration 10 --report-interval 10 $flags > $W/consumer.out 2>&1 & local c=$!
  sleep 1
  bench $1 --duration 8 -w 16 > /dev/null
  wait $c; tail -1 $W/consumer.out
}
field() { echo "$1" | grep -o "$2 [0-9.]*" | grep -o '[0-9.]*$'; }
bench off --duration 4 -w 20 > /dev/null; bench on --duration 4 -w 20 > /dev/null # warm-up
for round in $(seq "$ROUNDS"); do
  case " ${MODES:-produce consume} " in *" produce "*)
  for args in "-w 1" "-w 20" "-w 64 -y true" "-w 8 -b 32"; do
    for t in off on; do
      line=$(bench $t --duration 8 $args)
      echo "$round tls=$t [$args] tps=$(field "$line" 'Send TPS:') p50=$(field "$line" p50) failed=$(field "$line" 'Send Failed:')"
    done
  done;; esac
  case " ${MODES:-produce consume} " in *" consume "*)
  for t in off on; do
    line=$(consume $t)
    echo "$round tls=$t [consume, -w 16 sending] consumed=$(field "$line" 'Consume Total:') b2c_p50=$(field "$line" p50)"
  done;; esac
done
kill $brpid; wait $brpid 2>/dev/null; kill $nspid; wait $nspid 2>/dev/null
rm -rf $W
