#!/usr/bin/env bash
# Builds a Ruby gem into DIR (default <repo>/target/packages) and prints the gem's path. Both are
# built without the internet.
#
# - `package.sh [DIR]`: the worker, a platform gem (tasker-workflows-<version>-<platform>.gem,
#   e.g. x86_64-linux) carrying the prebuilt native extension: build.sh (compiles the extension
#   in release and copies it to lib/tasker/tasker_rb.so), then `gem build
#   tasker-workflows.gemspec` with the extension's debug symbols stripped. It depends on
#   tasker-workflows-client of its version. Honours CARGO_TARGET_DIR.
# - `package.sh --client [DIR]`: the API client alone, tasker-workflows-client-<version>.gem, pure
#   Ruby: `gem build tasker-workflows-client.gemspec`, nothing compiled.
#
# Runs from any folder. Install from DIR (--local: the gems in the current folder, where the
# worker gem finds the client gem it depends on by name). The worker gem by its file: RubyGems
# 3.3 (Ruby 3.1's) finds a platform gem by name only on a server.
#
#   workers/ruby/package.sh --client DIR && workers/ruby/package.sh DIR
#   cd DIR && gem install --local tasker-workflows-0.1.0-x86_64-linux.gem   # or tasker-workflows-client
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
client=false
gemspec=tasker-workflows.gemspec
if [[ "${1:-}" == "--client" ]]; then
  client=true
  gemspec=tasker-workflows-client.gemspec
  shift
fi
out="${1:-$root/target/packages}"

$client || "$here/build.sh" >&2
mkdir -p "$out"
out="$(cd "$out" && pwd)"
cd "$here"
if ! $client; then
  # Symbols are most of the library's size; strip a copy, then rename it into place (a Ruby
  # process that has the library loaded keeps a whole file, as in build.sh).
  so="lib/tasker/tasker_rb.so"
  if command -v strip >/dev/null; then
    strip --strip-unneeded -o "$so.tmp" "$so"
    mv -f "$so.tmp" "$so"
  fi
fi
name="$(ruby -e 'puts Gem::Specification.load(ARGV[0]).file_name' "$gemspec")"
gem build --quiet "$gemspec" --output "$out/$name" >&2
echo "$out/$name"
