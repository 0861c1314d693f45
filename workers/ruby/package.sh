#!/usr/bin/env bash
# Builds the Ruby gem into DIR (default <repo>/target/packages) and prints the gem's path: a
# platform gem (tasker-<version>-<platform>.gem, e.g. x86_64-linux) carrying the prebuilt
# native extension, built without the internet: build.sh (compiles the extension in release and
# copies it to lib/tasker/tasker_rb.so), then `gem build tasker.gemspec` with the extension's
# debug symbols stripped. Honours CARGO_TARGET_DIR. Runs from any folder.
#
#   workers/ruby/package.sh [DIR]
#   gem install --local DIR/tasker-0.1.0-x86_64-linux.gem
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$root/target/packages}"

"$here/build.sh" >&2
mkdir -p "$out"
out="$(cd "$out" && pwd)"
cd "$here"
# Symbols are most of the library's size; strip a copy, then rename it into place (a Ruby
# process that has the library loaded keeps a whole file, as in build.sh).
so="lib/tasker/tasker_rb.so"
if command -v strip >/dev/null; then
  strip --strip-unneeded -o "$so.tmp" "$so"
  mv -f "$so.tmp" "$so"
fi
name="$(ruby -e 'puts Gem::Specification.load("tasker.gemspec").file_name')"
gem build --quiet tasker.gemspec --output "$out/$name" >&2
echo "$out/$name"
