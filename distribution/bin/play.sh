#!/usr/bin/env bash
# Quick start: a name server, a broker and the gRPC proxy on this machine with the default
# configuration (name server on 9876, broker on 10911 advertising 127.0.0.1, store under
# ~/store, proxy for RocketMQ 5 clients on 8081).
# In a checkout, builds the release binaries if needed (see common.sh for where binaries are
# found); logs and pid files go to $STELLMQ_RUN_DIR (default ~/stellmq). Stop with:
# mqshutdown proxy; mqshutdown broker; mqshutdown namesrv (beside this script)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

stellmq_ensure_built mqnamesrv mqbroker mqproxy
mkdir -p "$STELLMQ_RUN_DIR/logs"

running() {
    [ -f "$STELLMQ_RUN_DIR/$1.pid" ] && kill -0 "$(cat "$STELLMQ_RUN_DIR/$1.pid")" 2>/dev/null
}

start() {
    local name="$1" pattern="$2"
    shift 2
    local log="$STELLMQ_RUN_DIR/logs/$name.log"
    if running "$name"; then
        echo "$name already running (pid $(cat "$STELLMQ_RUN_DIR/$name.pid")), log $log"
        return
    fi
    nohup "$@" >"$log" 2>&1 &
    echo $! >"$STELLMQ_RUN_DIR/$name.pid"
    for _ in $(seq 1 300); do
        if grep -q "$pattern" "$log" 2>/dev/null; then
            echo "$name started (pid $(cat "$STELLMQ_RUN_DIR/$name.pid")), log $log"
            return
        fi
        if ! running "$name"; then
            echo "$name failed to start:" >&2
            tail -20 "$log" >&2
            exit 1
        fi
        sleep 0.1
    done
    echo "$name did not report readiness in 30 s; see $log" >&2
    exit 1
}

proxy_conf=()
if [ -f "$STELLMQ_HOME/conf/rmq-proxy.json" ]; then
    proxy_conf=(--pc "$STELLMQ_HOME/conf/rmq-proxy.json")
fi
start namesrv "boot success" "$(stellmq_exe mqnamesrv)"
start broker "boot success" "$(stellmq_exe mqbroker)" -n 127.0.0.1:9876
start proxy "startup successfully" "$(stellmq_exe mqproxy)" -n 127.0.0.1:9876 ${proxy_conf[@]+"${proxy_conf[@]}"}

cat <<MSG

StellMQ is running: name server 127.0.0.1:9876, broker 127.0.0.1:10911, gRPC proxy 127.0.0.1:8081.
Point any RocketMQ 4 client at name server 127.0.0.1:9876 (e.g. Java: -Drocketmq.namesrv.addr=127.0.0.1:9876,
C++/Python SDK: set_namesrv_addr('127.0.0.1:9876')), and any RocketMQ 5 (gRPC) client at endpoints 127.0.0.1:8081.
Logs: $STELLMQ_RUN_DIR/logs
Stop: $STELLMQ_SCRIPT_DIR/mqshutdown proxy && $STELLMQ_SCRIPT_DIR/mqshutdown broker && $STELLMQ_SCRIPT_DIR/mqshutdown namesrv
MSG
