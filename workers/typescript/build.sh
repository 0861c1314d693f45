#!/usr/bin/env bash
# Builds the TypeScript worker: Node + npm if missing (cargo-make/ensure-deps.sh), npm
# dependencies (the client's generator, @hey-api/openapi-ts, among them), the client's generated
# modules (src/generated, from the repository's openapi.json: client/generate.mjs, only when the
# document changed), the native binding in release mode (CARGO_TARGET_DIR honoured, default the
# repo's target/), then the TypeScript.
# Idempotent, quiet when everything is in place; runnable from any directory.
# `build.sh --deps` stops after Node, the npm dependencies and the generated modules, without
# Rust (what `package.sh --client` needs: it compiles the client modules itself).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
# shellcheck source=cargo-make/lib/common.sh
source "$root/cargo-make/lib/common.sh"
LOG_PREFIX="[typescript]"

# The "typescript" group of cargo-make/dependencies.txt: Debian's nodejs and npm, installed only
# when dpkg lacks them and `node` / `npm` are not there otherwise (NodeSource's count).
"$root/cargo-make/ensure-deps.sh" typescript
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  log "node and npm are required"
  exit 1
fi
node_major="$(node -p 'process.versions.node.split(".")[0]')"
if (( node_major < 18 )); then
  log "Node $(node --version) is too old: Node 18 or newer is needed"
  exit 1
fi
deps_only=false
[[ "${1:-}" == "--deps" ]] && deps_only=true
$deps_only || command -v cargo >/dev/null || { log "cargo is missing: install Rust (rustup)"; exit 1; }

cd "$here"
# Install only when the lock changed since the last install. `npm install` rather than `npm ci`:
# npm 11's ci rejects this lock for optional per-platform packages of @napi-rs/cli's
# dependencies that the lock (rightly) omits; install keeps the locked versions all the same.
if [[ ! -f node_modules/.package-lock.json || package-lock.json -nt node_modules/.package-lock.json ]]; then
  log "npm install (from package-lock.json)"
  npm install --no-audit --no-fund --loglevel=error
fi
# src/generated from ../../openapi.json (not committed; nothing to do when it is current).
node client/generate.mjs
$deps_only && exit 0

# The native library is built by cargo for the host, like the Python and Ruby bindings and the
# demo's binaries, so all of them share one release build of the dependencies: `napi build`
# always passes `--target`, which builds into target/<triple>/ and compiled every dependency a
# second time (4m43s of a 40-minute CI run on 2 cores). `npm run build:native` is `napi build`:
# it also regenerates the loader index.js and the types index.d.ts from src/lib.rs, to be run
# (and both committed) after changing what the binding exports; test/binding.test.js fails
# while they miss an export of the library.
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) node_file=tasker-node.linux-x64-gnu.node ;;
  Linux-aarch64) node_file=tasker-node.linux-arm64-gnu.node ;;
  *) node_file="" ;;
esac
# (ldd's answer is read whole: `grep -q` in a pipe under pipefail can fail it with SIGPIPE.)
libc="$(ldd --version 2>&1 || true)"
if [[ -n "$node_file" && "${libc,,}" != *musl* ]]; then
  cargo build --release --quiet -p tasker-node
  cp "$CARGO_TARGET_DIR/release/libtasker_node.so" "$here/$node_file.tmp"
else
  # Elsewhere napi names the file for the platform as index.js looks for it (Node >= 20.17).
  npx --no-install napi build --platform --release --package tasker-node >/dev/null
  # shellcheck disable=SC2012 # napi's own file names: no spaces or newlines to trip over
  node_file="$(ls -t tasker-node.*.node | head -1)"
  cp "$here/$node_file" "$here/$node_file.tmp"
fi
# Symbols triple the size of what npm pack ships. (Stripping the copy, not through the release
# profile, keeps the shared build cache valid for everyone else.) The stripped copy is renamed
# into place: a worker started meanwhile (the slow suites run beside tests/slow/packages.rs,
# whose package.sh runs this script) loads the old file or the new one, never half of one.
if command -v strip >/dev/null; then
  strip --strip-unneeded "$here/$node_file.tmp"
fi
mv -f "$here/$node_file.tmp" "$here/$node_file"

# Into an empty folder: a renamed or deleted source must not leave its old output behind for
# `npm pack` to ship (dist/bin/tasker-worker.js outlived its rename once). dist/ is replaced only
# when the output differs, so a rebuild of the same sources never takes dist/ away from a worker
# starting at that moment.
rm -rf "$here/dist.new"
npx --no-install tsc -p tsconfig.json --outDir "$here/dist.new"
if [[ -d "$here/dist" ]] && diff -rq "$here/dist" "$here/dist.new" >/dev/null; then
  rm -rf "$here/dist.new"
else
  rm -rf "$here/dist.old"
  [[ -d "$here/dist" ]] && mv "$here/dist" "$here/dist.old"
  mv "$here/dist.new" "$here/dist"
  rm -rf "$here/dist.old"
fi
