#!/usr/bin/env bash
# Builds every package Tasker ships into one folder, DIR (default <repo>/target/packages), and
# prints their paths, one a line: for each language the client-only package (pure, no native
# code) and the worker package (the native core built for this platform).
#
#   tasker-workflows-client-<v>-py3-none-any.whl    tasker-workflows-<v>-cp311-abi3-<platform>.whl
#   tasker-workflows-client-<v>.tgz                 tasker-workflows-<v>.tgz
#   tasker-workflows-client-<v>.gem                 tasker-workflows-<v>-<platform>.gem
#
# Each comes from workers/<lang>/package.sh (`--client` for the client), which says how it is
# built; this script only runs them, the clients first (each worker depends on its client, and a
# client fails in seconds where a worker takes minutes). Install from DIR by name as the README's
# "Install" shows; tests/slow/packages.rs does so outside the repository. Honours
# CARGO_TARGET_DIR. `cargo make package [DIR]` runs it.
set -euo pipefail
# shellcheck source=cargo-make/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
LOG_PREFIX="[package]"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$root/target/packages}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

packages=()
for language in python typescript ruby; do
  for kind in --client ""; do
    started="$(now_ms)"
    # shellcheck disable=SC2086 # $kind: no argument at all for the worker
    path="$("$root/workers/$language/package.sh" $kind "$out" | tail -n 1)"
    [[ -f "$path" ]] || die "workers/$language/package.sh $kind printed no package"
    log "$(basename "$path") ($(since "$started"))"
    packages+=("$path")
  done
done
printf '%s\n' "${packages[@]}"
