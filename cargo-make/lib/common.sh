# shellcheck shell=bash
# Helpers that every script of the project shares: messages, timing, ports, locks, finding cargo.
# Sourced, never run; each script sources it relative to its own location, so it works from any
# folder:
#   source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
#
# A script names itself with LOG_PREFIX ("[services]", "[cluster]", "demo:", ...) before its first
# message: log, warn, die and show_log_tail put it first, so each script's lines read as they
# always have whoever defines the helpers. The scripts that framed a log's tail without their
# prefix set LOG_TAIL_PREFIX="" to keep it so.

LOG_PREFIX=""

log() { printf '%s %s\n' "$LOG_PREFIX" "$*" >&2; }
warn() { printf '%s WARNING: %s\n' "$LOG_PREFIX" "$*" >&2; }
die() { printf '%s ERROR: %s\n' "$LOG_PREFIX" "$*" >&2; exit 1; }
# A heading on standard output, between the steps of a long run (the demo, cluster mode).
say() { printf '\n==> %s\n' "$*"; }

# show_log_tail FILE [LINES]: the end of a log file (30 lines unless told), so that a failure
# explains itself without a second command.
show_log_tail() {
  local file="$1" lines="${2:-30}" frame="${LOG_TAIL_PREFIX-$LOG_PREFIX }"
  if [[ -r "$file" ]]; then
    printf '%s---- last %d lines of %s ----\n' "$frame" "$lines" "$file" >&2
    tail -n "$lines" "$file" >&2 || true
    printf '%s---- end of %s ----\n' "$frame" "$file" >&2
  else
    printf '%s(no log at %s)\n' "$frame" "$file" >&2
  fi
}

# Milliseconds since the epoch; strips the decimal point whatever the locale uses for it.
now_ms() { local us="${EPOCHREALTIME//[!0-9]/}"; echo $((us / 1000)); }
# since START: the time from START (a now_ms value) until now, as "1.234s"; as "1.23 s" in a
# script that sets SINCE_CENTISECONDS=1 (ensure-deps.sh, whose [deps] lines have always read so).
since() {
  local ms=$(($(now_ms) - $1))
  if [[ -n "${SINCE_CENTISECONDS:-}" ]]; then
    printf '%d.%02d s' $((ms / 1000)) $((ms % 1000 / 10))
  else
    printf '%d.%03ds' $((ms / 1000)) $((ms % 1000))
  fi
}

is_root() { [[ "$(id -u)" -eq 0 ]]; }

# Does something listen on 127.0.0.1:PORT? Bounded, so a port that swallows packets can't hang us.
port_open() { timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null; }

# take_lock FILE SECONDS TIMEOUT_MESSAGE [WAITING_MESSAGE]: hold an exclusive lock on FILE
# (flock) until the script exits, waiting up to SECONDS for whoever holds it, else die with
# TIMEOUT_MESSAGE. With WAITING_MESSAGE, say so first when somebody else holds it, since the wait
# may be long.
# The descriptor's number is left in LOCK_FD. Whatever may outlive the script (a daemon, a
# background instance) or takes a lock of its own (another of our scripts) must be started with
# it closed, `{LOCK_FD}>&-`, or it would keep holding the lock after we exit. That redirection
# needs LOCK_FD set: only use it where the lock has been taken.
LOCK_FD=""
take_lock() {
  local file="$1" seconds="$2" timeout_message="$3" waiting_message="${4:-}"
  exec {LOCK_FD}>>"$file"
  if [[ -n "$waiting_message" ]] && ! flock -n "$LOCK_FD"; then
    log "$waiting_message"
  fi
  flock -w "$seconds" "$LOCK_FD" || die "$timeout_message"
}

# rustup installs cargo in ~/.cargo/bin, which a fresh non-login shell may not have on PATH.
cargo_on_path() {
  local cargo_bin="${CARGO_HOME:-$HOME/.cargo}/bin"
  if ! command -v cargo >/dev/null 2>&1 && [[ -x "$cargo_bin/cargo" ]]; then
    export PATH="$cargo_bin:$PATH"
  fi
}
