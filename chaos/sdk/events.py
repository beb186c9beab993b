"""What the SDK scripts of the fault harness share: their events, one JSON line each on
stdout (mqchaos reads and time-stamps them), written whole even from several threads."""
import json
import sys
import threading

_OUT = threading.Lock()


def emit(**record):
    with _OUT:
        sys.stdout.write(json.dumps(record) + "\n")
        sys.stdout.flush()
