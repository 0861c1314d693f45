#!/usr/bin/env bash
# Builds the Ruby binding (release) and puts it where `require "tasker"` loads it:
# workers/ruby/lib/tasker/tasker_rb.so. Idempotent; installs what a fresh Debian 12 lacks
# (ruby, its headers, libclang for rb-sys' bindgen) through cargo-make/ensure-deps.sh.
# Honours CARGO_TARGET_DIR (default: <repo>/target). Runnable from any directory.
# `build.sh --bench` adds Tasker::BenchHost for bench_calls.rb; the gem never ships it, and a
# plain `build.sh` builds the library without it again.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"

# ruby, ruby-dev, libclang-dev (rb-sys' bindgen): the "ruby" group of cargo-make/dependencies.txt,
# each checked with dpkg-query and installed with apt-get only if missing.
"$root/cargo-make/ensure-deps.sh" ruby

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
features=()
[[ "${1:-}" == "--bench" ]] && features=(--features bench)
cargo build --quiet --release --manifest-path "$root/Cargo.toml" -p tasker-rb "${features[@]}"
# Copy then rename, so a Ruby process that has the old library loaded keeps a whole file.
dest="$here/lib/tasker/tasker_rb.so"
cp "$CARGO_TARGET_DIR/release/libtasker_rb.so" "$dest.tmp"
mv -f "$dest.tmp" "$dest"
echo "[ruby] built $dest" >&2
