#!/usr/bin/env bash
# Builds the npm package into DIR (default <repo>/target/packages) and prints the tarball's path:
# tasker-worker-<version>.tgz with dist/ (CommonJS, the ESM entry dist/index.mjs, and the types
# of both), the napi loader and the native library built for this platform, and the
# `tasker-worker-node` command. build.sh first (native binding in release, then tsc). Honours
# CARGO_TARGET_DIR. Runs from any folder.
#
#   workers/typescript/package.sh [DIR]
#   npm install DIR/tasker-worker-0.1.0.tgz
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$root/target/packages}"

"$here/build.sh" >&2
mkdir -p "$out"
out="$(cd "$out" && pwd)"
cd "$here"
# --json: the file name as npm wrote it, rather than guessed from package.json.
name="$(npm pack --silent --json --pack-destination "$out" | node -e \
  'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => console.log(JSON.parse(s)[0].filename))')"
[[ -f "$out/$name" ]] || { echo "package.sh: npm pack wrote no $out/$name" >&2; exit 1; }
echo "$out/$name"
