# Shared by the StellMQ scripts: where things are.
# STELLMQ_HOME: the project checkout (found from this script's location).
# STELLMQ_RUN_DIR: logs and pid files (default ~/stellmq).
STELLMQ_HOME="${STELLMQ_HOME:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
# Exported: servers read conf/plain_acl.yml under it when aclEnable is on.
export STELLMQ_HOME
STELLMQ_RUN_DIR="${STELLMQ_RUN_DIR:-$HOME/stellmq}"

# The checkout's cargo target directory, where `cargo build` puts the binaries: cargo
# metadata honours CARGO_TARGET_DIR and .cargo/config's build.target-dir; without cargo,
# target/ of the checkout.
stellmq_target_dir() {
    local dir=""
    if command -v cargo >/dev/null 2>&1; then
        dir=$(cd "$STELLMQ_HOME" && cargo metadata --format-version 1 --no-deps 2>/dev/null |
            grep -o '"target_directory":"[^"]*"' | head -n 1 | cut -d '"' -f 4)
    fi
    dir="${dir:-$STELLMQ_HOME/target}"
    # A relative CARGO_TARGET_DIR comes back as <checkout>/../x: show it plainly.
    if [ -d "$dir" ]; then
        dir=$(cd "$dir" && pwd)
    fi
    echo "$dir"
}
STELLMQ_BIN="${STELLMQ_BIN:-$(stellmq_target_dir)/release}"

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
