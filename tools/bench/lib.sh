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
