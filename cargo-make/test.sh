#!/usr/bin/env bash
# The full test suite: what `bin/dev test`, `cargo make test` and CI run. Stops at the first failure.
# Extra arguments go to `cargo test`, e.g. `bin/dev test -p tasker-shared` or `bin/dev test -- --nocapture`.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=cargo-make/lib/common.sh
source cargo-make/lib/common.sh
LOG_PREFIX="[test]"

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

# The Ruby binding's bench-only code (Tasker::BenchHost) builds only with its feature: linted in
# the same pass (a second `clippy -p tasker-rb --features bench` checked every dependency again
# in its own feature set, ~2.5 minutes of CI).
step "cargo clippy --workspace --all-targets --features tasker-rb/bench -- -D warnings"
cargo clippy --workspace --all-targets --features tasker-rb/bench -- -D warnings

# End-to-end tests start the orchestrator/worker binaries from target/debug, and cargo only builds
# a package's own binaries for its tests: build them all first, with every test, in the one
# feature set every later step selects (cargo-make/lib/tests.sh says why that matters).
step "cargo build --workspace --bins --tests"
cargo build --workspace --bins --tests

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
  # slow suites run: every crate's unit and integration tests but the root's, then the root's
  # unit tests and tests/fast/ (each suite a few seconds), then tests/slow/ (slow.sh, the
  # packages suite beside the others), then every crate's doc tests. Binaries built above, run
  # from the list cargo gives (lib/tests.sh): one build, one feature set.
  # shellcheck source=cargo-make/lib/tests.sh
  source cargo-make/lib/tests.sh
  built="$(test_binaries)" || die "the tests do not build"
  mapfile -t crates < <(awk '$1 != "tasker"' <<<"$built")
  mapfile -t fast < <(awk '$1 == "tasker" && ($2 == "lib" || $2 ~ /^tests\/fast\//)' <<<"$built")
  step "unit and integration tests of every crate but the root"
  for line in "${crates[@]}"; do run_test_binary "$line"; done
  step "the root's unit tests and tests/fast"
  for line in "${fast[@]}"; do run_test_binary "$line"; done
  step "cargo-make/slow.sh (tests/slow, the packages suite beside the others)"
  cargo-make/slow.sh
  step "cargo test --workspace --doc"
  cargo test --workspace --doc
fi

step "all checks passed"
