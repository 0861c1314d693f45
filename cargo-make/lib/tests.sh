# shellcheck shell=bash
# Test binaries built once and run as `cargo test` runs them. Sourced by test.sh and slow.sh.
#
# Every build of the suite selects the whole workspace (`--workspace`, dev-dependencies on):
# cargo resolves features per invocation from the packages it selects, so `-p tasker` or
# `--exclude tasker` would each build a second copy of tokio, hyper, sqlx, lapin and all above
# them (minutes on 2 cores). One selection, one copy; what runs is chosen from the binaries.

# test_binaries [CARGO TEST ARGS...]: builds the workspace's test binaries (`--no-run`), then
# prints one line per binary: `<package> <target> <folder> <executable>` (cargo-make/lib/
# test_binaries.py says what each field holds).
test_binaries() {
  cargo test --workspace --no-run --message-format=json "$@" |
    python3 "$(dirname "${BASH_SOURCE[0]}")/test_binaries.py"
}

# run_test_binary LINE [ARGS...]: runs one line of test_binaries from its package's folder, with
# the heading cargo test prints; extra arguments go to the test harness.
run_test_binary() {
  local package target folder exe
  read -r package target folder exe <<<"$1"
  shift
  printf '\n     Running %s %s (%s)\n' "$package" "$target" "$exe"
  (cd "$folder" && "$exe" "$@")
}
