#!/usr/bin/env bash
# The full test suite: what `bin/dev test`, `cargo make test` and CI run. Stops at the first failure.
# Extra arguments go to `cargo test`, e.g. `bin/dev test -p tasker-shared` or `bin/dev test -- --nocapture`.
set -euo pipefail
cd "$(dirname "$0")/.."

suite_start=$SECONDS

# The suite runs as itself: the credentials `source .tasker/demo/env` hands a user's CLI and
# workers would otherwise reach every process a test starts (a worker of a test speaking as the
# demo's `admin` broker user to queues it may not read).
unset TASKER_AMQP_URL TASKER_TOKEN TASKER_URL TASKER_WORKER__API_TOKEN
step() { printf '\n==> %s   [%s, +%ds]\n' "$*" "$(date +%H:%M:%S)" $((SECONDS - suite_start)); }

# Everything the suite needs (cargo-make/dependencies.txt), checked with dpkg-query and installed
# before any build, so that a package that cannot be installed fails in seconds, by name:
# services.sh start ensures the "services" group (minus what DATABASE_URL/AMQP_URL replace;
# idempotent and ~0.05 s when cargo make's services-start already did it), then the bindings'.
cargo-make/services.sh start
eval "$(cargo-make/services.sh env)"
step "cargo-make/ensure-deps.sh ruby python typescript browser units"
cargo-make/ensure-deps.sh ruby python typescript browser units

# A failing test's backtrace is worth more than the noise it costs.
export RUST_BACKTRACE="${RUST_BACKTRACE:-1}"

# Cheapest checks first, so a formatting slip fails in seconds rather than after a build.
step "cargo fmt --all -- --check"
cargo fmt --all -- --check

# The FFI bindings' build scripts need their language's headers (rb-sys: Ruby's and libclang,
# installed above), so each build.sh (builds the binding) runs before clippy compiles them.
for lang_build in workers/*/build.sh; do
  [[ -x "$lang_build" ]] || continue
  step "$lang_build"
  "$lang_build"
done

step "cargo clippy --workspace --all-targets -- -D warnings"
cargo clippy --workspace --all-targets -- -D warnings
# The Ruby binding's bench-only code (Tasker::BenchHost) builds only with its feature.
step "cargo clippy -p tasker-rb --features bench -- -D warnings"
cargo clippy -p tasker-rb --features bench -- -D warnings

# End-to-end tests start the orchestrator/worker binaries from target/debug, and cargo only builds
# a package's own binaries for its tests: build them all first.
step "cargo build --workspace --bins"
cargo build --workspace --bins

# Each FFI binding: install what it lacks, build it (release), run its own test suite. The
# conformance suite in `cargo test` then runs every language's worker.
for lang_test in workers/*/test.sh; do
  [[ -x "$lang_test" ]] || continue
  step "$lang_test"
  "$lang_test"
done

# The dashboard's browser test: Debian's Chromium and playwright-core.
step "tests/dashboard/setup.sh"
tests/dashboard/setup.sh

if (($#)); then
  step "cargo test --workspace $*"
  cargo test --workspace "$@"
else
  # The same tests as `cargo test --workspace`, fast first so a broken basic fails before the
  # slow suites run: every crate but the root (unit, integration and doc tests), then the root's
  # unit tests and tests/fast/ (each suite a few seconds), then tests/slow/ (slow.sh: built once,
  # the packages suite beside the others), then its doc tests.
  suites() { local f; for f in "tests/$1"/*.rs; do printf -- '--test\n%s\n' "$(basename "$f" .rs)"; done; }
  mapfile -t fast < <(suites fast)
  step "cargo test --workspace --exclude tasker"
  cargo test --workspace --exclude tasker
  step "cargo test -p tasker --lib (tests/fast)"
  cargo test -p tasker --lib "${fast[@]}"
  step "cargo-make/slow.sh (tests/slow, the packages suite beside the others)"
  cargo-make/slow.sh
  step "cargo test -p tasker --doc"
  cargo test -p tasker --doc
fi

step "all checks passed"
