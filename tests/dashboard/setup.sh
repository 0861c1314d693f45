#!/usr/bin/env bash
# What the dashboard's browser test (tests/fast/dashboard.rs) needs: Debian's Chromium (the "browser"
# group of cargo-make/dependencies.txt; Playwright's own browser download is not used) and
# playwright-core from package-lock.json. Idempotent and quiet when both are in place.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# shellcheck source=cargo-make/lib/common.sh
source "$root/cargo-make/lib/common.sh"
LOG_PREFIX="[dashboard]"

"$root/cargo-make/ensure-deps.sh" browser typescript
command -v npm >/dev/null || { log "npm is required"; exit 1; }
cd "$here"
if [[ ! -f node_modules/.package-lock.json || package-lock.json -nt node_modules/.package-lock.json ]]; then
  log "npm ci (playwright-core, from package-lock.json)"
  npm ci --no-audit --no-fund --loglevel=error
fi
