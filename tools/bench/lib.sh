# Shared by the benchmark scripts of this folder: source "$(dirname "$0")/lib.sh".

# A port p with p-2 .. p+1 free (the broker listens on p, p-2 and p+1).
free_port() {
  python3 - <<'PY'
import random, socket
while True:
    p = random.randint(20000, 60000)
    socks = []
    try:
        for q in range(p - 2, p + 2):
            s = socket.socket(); socks.append(s); s.bind(("127.0.0.1", q))
        print(p); break
    except OSError:
        pass
    finally:
        for s in socks: s.close()
PY
}

cpu_ticks() { # pid -> utime+stime in clock ticks
  sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'
}

# Waits until each process used at most 5 % of a core over one second (its start-up work,
# such as pre-faulting the first CommitLog segments, done); gives up after max-seconds.
# Prints the seconds waited; returns 1 if they were still busy.
wait_quiet() { # max-seconds pid...
  local max=$1 waited=0 hz before after p quiet
  shift
  hz=$(getconf CLK_TCK)
  while [ "$waited" -lt "$max" ]; do
    before=(); for p in "$@"; do before+=("$(cpu_ticks "$p")"); done
    sleep 1; waited=$((waited + 1))
    quiet=1; local i=0
    for p in "$@"; do
      after=$(cpu_ticks "$p")
      [ $((after - before[i])) -gt $((hz / 20)) ] && quiet=0
      i=$((i + 1))
    done
    [ "$quiet" = 1 ] && { echo "$waited"; return 0; }
  done
  echo "$waited"; return 1
}
