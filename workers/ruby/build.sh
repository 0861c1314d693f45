#!/usr/bin/env bash
# Builds the Ruby binding (release) and puts it where `require "tasker"` loads it:
# workers/ruby/lib/tasker/tasker_rb.so. Idempotent; installs what a fresh Debian 12 lacks
# (ruby, its headers, libclang for rb-sys' bindgen) with apt-get, only if missing.
# Honours CARGO_TARGET_DIR (default: <repo>/target). Runnable from any directory.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"

missing=()
command -v ruby >/dev/null 2>&1 || missing+=(ruby)
if ! command -v ruby >/dev/null 2>&1 ||
   [[ ! -f "$(ruby -e 'print RbConfig::CONFIG["rubyhdrdir"]')/ruby.h" ]]; then
  missing+=(ruby-dev)
fi
compgen -G '/usr/lib/llvm-*/lib/libclang*.so*' >/dev/null || missing+=(libclang-dev)
if ((${#missing[@]})); then
  echo "[ruby] installing ${missing[*]}" >&2
  sudo=""; [[ $(id -u) == 0 ]] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
cargo build --quiet --release --manifest-path "$root/Cargo.toml" -p tasker-rb
# Copy then rename, so a Ruby process that has the old library loaded keeps a whole file.
dest="$here/lib/tasker/tasker_rb.so"
cp "$CARGO_TARGET_DIR/release/libtasker_rb.so" "$dest.tmp"
mv -f "$dest.tmp" "$dest"
echo "[ruby] built $dest" >&2
