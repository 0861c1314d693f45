#!/usr/bin/env bash
# Builds an npm package into DIR (default <repo>/target/packages) and prints the tarball's path.
#
# - `package.sh [DIR]`: the worker, tasker-workflows-<version>.tgz: dist/ (CommonJS, the ESM
#   entry dist/index.mjs, and the types of both), the napi loader and the native library built
#   for this platform, and the `tasker-worker-node` command. build.sh first (native binding in
#   release, then tsc). Honours CARGO_TARGET_DIR.
# - `package.sh --client [DIR]`: the API client alone, tasker-workflows-client-<version>.tgz:
#   src/client_index.ts (and .mts) and the modules they import, compiled with client/tsconfig.json
#   (no Rust: `build.sh --deps` only installs the npm dependencies); it fails if the output
#   reaches the napi loader or a .node file. The manifest is client/package.json.
#
# Runs from any folder.
#
#   workers/typescript/package.sh DIR && workers/typescript/package.sh --client DIR
#   npm install DIR/tasker-workflows-0.1.0.tgz          # or DIR/tasker-workflows-client-0.1.0.tgz
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
client=false
if [[ "${1:-}" == "--client" ]]; then
  client=true
  shift
fi
out="${1:-$root/target/packages}"

if $client; then "$here/build.sh" --deps >&2; else "$here/build.sh" >&2; fi
mkdir -p "$out"
out="$(cd "$out" && pwd)"
cd "$here"
package="$here"
if $client; then
  # The package's folder: its manifest, README and the compiled client modules, nothing else.
  export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
  mkdir -p "$CARGO_TARGET_DIR"
  package="$(mktemp -d "$CARGO_TARGET_DIR/tmp-npm.XXXXXX")"
  trap 'rm -rf "$package"' EXIT
  cp client/package.json client/README.md "$package/"
  npx --no-install tsc -p client/tsconfig.json --outDir "$package/dist"
  # One release is one version of both packages; and the client must load no native code.
  node - "$package" package.json <<'JS' >&2
const fs = require("node:fs");
const path = require("node:path");
const [dir, workerManifest] = process.argv.slice(2);
const version = (file) => JSON.parse(fs.readFileSync(file, "utf8")).version;
const problems = [];
if (version(path.join(dir, "package.json")) !== version(workerManifest)) {
  problems.push(`client/package.json's version is not package.json's (${version(workerManifest)})`);
}
for (const file of fs.readdirSync(path.join(dir, "dist"), { recursive: true })) {
  if (!fs.statSync(path.join(dir, "dist", file)).isFile()) continue;
  const text = fs.readFileSync(path.join(dir, "dist", file), "utf8");
  if (file.endsWith(".node") || /\.\.\/index(\.js)?["']|\.node["']/.test(text)) {
    problems.push(`dist/${file} is or loads native code`);
  }
}
if (problems.length > 0) {
  console.error(`package.sh: ${problems.join("; ")}`);
  process.exit(1);
}
JS
fi
# --json: the file name as npm wrote it, rather than guessed from package.json.
name="$(cd "$package" && npm pack --silent --json --pack-destination "$out" | node -e \
  'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => console.log(JSON.parse(s)[0].filename))')"
[[ -f "$out/$name" ]] || { echo "package.sh: npm pack wrote no $out/$name" >&2; exit 1; }
echo "$out/$name"
