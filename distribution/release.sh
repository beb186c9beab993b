#!/usr/bin/env bash
# Builds the release package, RocketMQ's layout: stellmq-<version>-<target>.tar.gz holding
#   bin/      mqnamesrv, mqbroker, mqadmin, mqbench, mqproxy, mqdashboard, mqcontroller (release builds) and the scripts
#             of distribution/bin that are not wrappers of those (play.sh, mqshutdown, common.sh)
#   conf/     the sample configurations
#   docs/, LICENSE, README.md
# Unpacked anywhere, it runs without a Rust toolchain (see docs/distribution.md).
#
# Usage: distribution/release.sh [--target <triple>] [--no-build] [--bin-dir <dir>]
#                                [--out <dir>] [--keep-debug]
#   --target <triple>  build for this target (cargo build --target); default: the host's
#   --no-build         package binaries already built (`cargo build --release --bin ...`),
#                      so that CI does not build them twice
#   --bin-dir <dir>    where the built binaries are; default: cargo's release directory
#                      (<target dir>/release, or <target dir>/<triple>/release with --target)
#   --out <dir>        where the tarball goes; default: <target dir>/dist
#   --keep-debug       keep the debug info of the release profile (default: stripped)
# The last line printed is the tarball's path.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STELLMQ_HOME="$ROOT"
source "$ROOT/distribution/bin/common.sh"

BINARIES=(mqnamesrv mqbroker mqadmin mqbench mqproxy mqdashboard mqcontroller)

usage() {
    sed -n '9,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

target="" build=1 bin_dir="" out="" strip_debug=1
while [ $# -gt 0 ]; do
    case "$1" in
        --target) target="${2:?--target needs a triple}"; shift 2 ;;
        --no-build) build=0; shift ;;
        --bin-dir) bin_dir="${2:?--bin-dir needs a directory}"; shift 2 ;;
        --out) out="${2:?--out needs a directory}"; shift 2 ;;
        --keep-debug) strip_debug=0; shift ;;
        -h | --help) usage ;;
        *) echo "release.sh: unknown option $1" >&2; usage ;;
    esac
done

# The workspace version, from [workspace.package] of Cargo.toml.
workspace_version() {
    awk '/^\[workspace\.package\]/ { p = 1; next }
         /^\[/ { p = 0 }
         p && /^version *=/ { gsub(/^version *= *"|".*$/, ""); print; exit }' "$ROOT/Cargo.toml"
}

host_triple() {
    command -v rustc >/dev/null 2>&1 && rustc -vV | sed -n 's/^host: //p'
}

version=$(workspace_version)
[ -n "$version" ] || { echo "release.sh: no version in Cargo.toml" >&2; exit 1; }
host=$(host_triple || true)
triple="${target:-$host}"
[ -n "$triple" ] || { echo "release.sh: no rustc to tell the host's target; pass --target" >&2; exit 1; }
target_dir=$(stellmq_target_dir)
if [ -z "$bin_dir" ]; then
    bin_dir="$target_dir${target:+/$target}/release"
fi
out="${out:-$target_dir/dist}"

if [ "$build" = 1 ]; then
    (cd "$ROOT" && cargo build --release --locked ${target:+--target "$target"} \
        $(printf -- '--bin %s ' "${BINARIES[@]}")) >&2
fi
for b in "${BINARIES[@]}"; do
    stellmq_is_binary "$bin_dir/$b" || {
        echo "release.sh: $bin_dir/$b is not built (run without --no-build, or pass --bin-dir)" >&2
        exit 1
    }
done

name="stellmq-$version-$triple"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pkg="$work/$name"
mkdir -p "$pkg/bin"
for b in "${BINARIES[@]}"; do
    cp "$bin_dir/$b" "$pkg/bin/$b"
    # The host's strip knows the host's binaries; cross builds keep their debug info.
    if [ "$strip_debug" = 1 ] && [ "$triple" = "$host" ] && command -v strip >/dev/null 2>&1; then
        strip --strip-debug "$pkg/bin/$b"
    fi
done
# The scripts, except the checkout's wrappers of the binaries: in the package the binary
# itself has that name.
for script in "$ROOT"/distribution/bin/*; do
    [ -e "$pkg/bin/$(basename "$script")" ] || cp -p "$script" "$pkg/bin/"
done
cp -R "$ROOT/conf" "$ROOT/docs" "$pkg/"
cp "$ROOT/LICENSE" "$ROOT/README.md" "$pkg/"

mkdir -p "$out"
tarball="$(cd "$out" && pwd)/$name.tar.gz"
owner=()
if tar --version 2>/dev/null | grep -q GNU; then
    owner=(--owner=0 --group=0 --numeric-owner)
fi
tar ${owner[@]+"${owner[@]}"} -C "$work" -czf "$tarball.part" "$name"
mv "$tarball.part" "$tarball"
echo "$tarball"
