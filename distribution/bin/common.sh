# Shared by the StellMQ scripts: where things are. The scripts work in three layouts:
#  - a release package (distribution/release.sh): the binaries are beside the scripts in
#    bin/, conf/ is beside bin/;
#  - a checkout: the scripts are in distribution/bin/, the binaries where cargo builds them
#    (built on first use when cargo is there);
#  - installed: the binaries on PATH (`cargo install --path ...`), the scripts anywhere.
# STELLMQ_HOME: the package or checkout (conf/ is read from it; found from this script's
#   location). STELLMQ_BIN: a directory of binaries to use instead of the above.
# STELLMQ_RUN_DIR: logs and pid files (default ~/stellmq).
STELLMQ_SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# A checkout: the workspace is two levels up.
stellmq_in_checkout() {
    [ -f "$STELLMQ_SCRIPT_DIR/../../Cargo.toml" ] && [ -d "$STELLMQ_SCRIPT_DIR/../../broker" ]
}

if stellmq_in_checkout; then
    STELLMQ_HOME="${STELLMQ_HOME:-$(cd "$STELLMQ_SCRIPT_DIR/../.." && pwd)}"
else
    STELLMQ_HOME="${STELLMQ_HOME:-$(cd "$STELLMQ_SCRIPT_DIR/.." && pwd)}"
fi
# Exported: servers read conf/plain_acl.yml under it when aclEnable is on.
export STELLMQ_HOME
STELLMQ_RUN_DIR="${STELLMQ_RUN_DIR:-$HOME/stellmq}"

# The checkout's cargo target directory, where `cargo build` puts the binaries: cargo
# metadata honours CARGO_TARGET_DIR and .cargo/config's build.target-dir; without cargo,
# CARGO_TARGET_DIR (relative to the checkout) or target/ of the checkout.
stellmq_target_dir() {
    local dir=""
    if command -v cargo >/dev/null 2>&1; then
        dir=$(cd "$STELLMQ_HOME" && cargo metadata --format-version 1 --no-deps 2>/dev/null |
            grep -o '"target_directory":"[^"]*"' | head -n 1 | cut -d '"' -f 4)
    elif [ -n "${CARGO_TARGET_DIR:-}" ]; then
        case "$CARGO_TARGET_DIR" in
            /*) dir="$CARGO_TARGET_DIR" ;;
            *) dir="$STELLMQ_HOME/$CARGO_TARGET_DIR" ;;
        esac
    fi
    dir="${dir:-$STELLMQ_HOME/target}"
    # A relative CARGO_TARGET_DIR comes back as <checkout>/../x: show it plainly.
    if [ -d "$dir" ]; then
        dir=$(cd "$dir" && pwd)
    fi
    echo "$dir"
}

# Where the binaries are expected: STELLMQ_BIN if set, else cargo's release directory in a
# checkout, else beside the scripts. Binaries missing there are looked up on PATH.
if [ -z "${STELLMQ_BIN:-}" ]; then
    if stellmq_in_checkout; then
        STELLMQ_BIN="$(stellmq_target_dir)/release"
    else
        STELLMQ_BIN="$STELLMQ_SCRIPT_DIR"
    fi
fi

# Whether `file` is an executable and not one of these scripts (in a checkout,
# distribution/bin holds wrappers named like the binaries).
stellmq_is_binary() {
    [ -f "$1" ] && [ -x "$1" ] || return 1
    [ "$(cd "$(dirname "$1")" && pwd)" != "$STELLMQ_SCRIPT_DIR" ] || [ "$(head -c 2 "$1")" != "#!" ]
}

# The binary `name` on PATH.
stellmq_on_path() {
    local name="$1" dir
    local IFS=:
    for dir in $PATH; do
        if stellmq_is_binary "${dir:-.}/$name"; then
            echo "${dir:-.}/$name"
            return 0
        fi
    done
    return 1
}

# The path of binary `name`: in STELLMQ_BIN, else on PATH; empty when neither has it.
stellmq_exe() {
    if stellmq_is_binary "$STELLMQ_BIN/$1"; then
        echo "$STELLMQ_BIN/$1"
    else
        stellmq_on_path "$1" || true
    fi
}

# Makes sure every binary named is there: in a checkout with cargo, builds the missing ones
# (release profile); otherwise they must be in STELLMQ_BIN or on PATH.
stellmq_ensure_built() {
    local missing=() b
    for b in "$@"; do
        stellmq_is_binary "$STELLMQ_BIN/$b" || missing+=("$b")
    done
    [ "${#missing[@]}" = 0 ] && return 0
    if stellmq_in_checkout && command -v cargo >/dev/null 2>&1; then
        echo "Building release binaries (${missing[*]}) ..."
        (cd "$STELLMQ_HOME" && cargo build --release --quiet $(printf -- '--bin %s ' "${missing[@]}")) || {
            echo "Build failed." >&2
            exit 1
        }
        return 0
    fi
    for b in "${missing[@]}"; do
        if [ -z "$(stellmq_exe "$b")" ]; then
            echo "$b not found: not in $STELLMQ_BIN, nor on PATH." >&2
            exit 1
        fi
    done
}
