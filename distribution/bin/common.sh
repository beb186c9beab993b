# Shared by the StellMQ scripts: where things are.
# STELLMQ_HOME: the project checkout (found from this script's location).
# STELLMQ_RUN_DIR: logs and pid files (default ~/stellmq).
STELLMQ_HOME="${STELLMQ_HOME:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
# Exported: servers read conf/plain_acl.yml under it when aclEnable is on.
export STELLMQ_HOME
STELLMQ_RUN_DIR="${STELLMQ_RUN_DIR:-$HOME/stellmq}"
STELLMQ_BIN="$STELLMQ_HOME/target/release"

# Builds the release binaries if any is missing.
stellmq_ensure_built() {
    local missing=0
    for b in "$@"; do
        [ -x "$STELLMQ_BIN/$b" ] || missing=1
    done
    if [ "$missing" = 1 ]; then
        echo "Building release binaries ($*) ..."
        (cd "$STELLMQ_HOME" && cargo build --release --quiet $(printf -- '--bin %s ' "$@")) || {
            echo "Build failed." >&2
            exit 1
        }
    fi
}
