#!/usr/bin/env bash
# Installs what a fresh machine lacks, from the one list cargo-make/dependencies.txt.
#
#   cargo-make/ensure-deps.sh GROUP...           install whatever these groups need and is missing
#                                                (GROUP:NAME picks one entry: services:postgresql)
#   cargo-make/ensure-deps.sh --remove GROUP...  remove the groups' `apt` packages (apt-get purge,
#                                                then autoremove --purge) and `cargo` crates
#   cargo-make/ensure-deps.sh --remove-all       every group, plus pip's and npm's caches: what
#                                                .ci/run does under CI=true, so that each CI run
#                                                installs it all again
#
# Every Debian package is looked up with dpkg-query ("install ok installed"), never guessed from
# files (a libclang*.so glob once matched libclang-cpp14, so libclang-dev was never installed and
# rb-sys failed ten minutes into the demo). When nothing is missing this only reads, in a few
# hundredths of a second, and needs no root. Otherwise: `apt-get update` once, then one
# `apt-get install` per package, so that a failure stops at once and names its package; quiet,
# with apt's output in <state>/logs/deps.log; the packages' system services are kept from
# starting (a temporary /usr/sbin/policy-rc.d; no PostgreSQL "main" cluster); and one install or
# removal at a time per machine (flock on /var/lock/tasker-deps.lock).
#
# Environment:
#   TASKER_SUDO          unset: as root, run apt-get; as anybody else, fail with the exact
#                        `sudo apt-get install -y ...` to run. Set: the prefix to run apt-get
#                        (and the writes of policy-rc.d) with, and no root check: TASKER_SUDO=sudo
#                        lets a non-root developer's scripts install; TASKER_SUDO= (empty) runs
#                        apt-get as is, which tests/fast/install_helper.rs does with a fake apt-get.
#   TASKER_HOME          state folder (default <repo>/.tasker); the log is its logs/deps.log
#   TASKER_DEPS_FILE     the list (default: dependencies.txt next to this script)
#   TASKER_DEPS_SYSROOT  prefix for the system paths this script writes (policy-rc.d, the
#                        createcluster drop-in, the lock file); for tests only
set -euo pipefail
# shellcheck source=cargo-make/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
LOG_PREFIX="[deps]"
SINCE_CENTISECONDS=1

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$here/.." && pwd)"
DEPS_FILE="${TASKER_DEPS_FILE:-$here/dependencies.txt}"
SYSROOT="${TASKER_DEPS_SYSROOT:-}"
STATE="${TASKER_HOME:-$ROOT/.tasker}"
LOG_FILE="$STATE/logs/deps.log"
POLICY_RC="$SYSROOT/usr/sbin/policy-rc.d"
CREATECLUSTER_DIR="$SYSROOT/etc/postgresql-common/createcluster.d"
LOCK_FILE="$SYSROOT/var/lock/tasker-deps.lock"

# --------------------------------------------------------------------------------------------
# The list
# --------------------------------------------------------------------------------------------
KINDS=() DEP_GROUPS=() NAMES=()
read_list() {
  [[ -r "$DEPS_FILE" ]] || die "cannot read the dependency list $DEPS_FILE"
  local line kind group name n=0
  while IFS= read -r line || [[ -n "$line" ]]; do
    n=$((n + 1))
    [[ "$line" =~ ^[[:space:]]*(#|$) ]] && continue
    read -r kind group name _ <<<"$line"
    case "$kind" in
      apt | apt-base | cargo) ;;
      *) die "$DEPS_FILE line $n: unknown kind '$kind' (apt, apt-base or cargo)" ;;
    esac
    [[ "$group" =~ ^[a-z0-9_-]+$ && "$name" =~ ^[A-Za-z0-9][A-Za-z0-9_.+-]*$ ]] \
      || die "$DEPS_FILE line $n: expected 'KIND GROUP NAME [why]', got: $line"
    KINDS+=("$kind")
    DEP_GROUPS+=("$group")
    NAMES+=("$name")
  done <"$DEPS_FILE"
}

all_groups() { printf '%s\n' "${DEP_GROUPS[@]}" | awk '!seen[$0]++' | paste -sd' '; }

# SEL: indices of the entries the arguments name (a group, or GROUP:NAME for one entry).
SEL=()
select_entries() {
  local arg i found
  SEL=()
  for arg in "$@"; do
    found=""
    for i in "${!NAMES[@]}"; do
      if [[ "$arg" == "${DEP_GROUPS[i]}" || "$arg" == "${DEP_GROUPS[i]}:${NAMES[i]}" ]]; then
        found=1
        [[ " ${SEL[*]} " == *" $i "* ]] || SEL+=("$i")
      fi
    done
    [[ -n "$found" ]] || die "unknown group or entry '$arg' (groups in $DEPS_FILE: $(all_groups))"
  done
}

# --------------------------------------------------------------------------------------------
# What is installed: asked of the package managers
# --------------------------------------------------------------------------------------------
dpkg_status() {
  # shellcheck disable=SC2016 # ${Status} is dpkg-query's format, not a shell variable
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true
}
dpkg_installed() { [[ "$(dpkg_status "$1")" == "install ok installed" ]]; }

# apt-base entries only: is what the package would provide already there by other means (the
# base image's PostgreSQL server, pyenv's Python, NodeSource's Node)? Asked only after dpkg said
# the package itself is not installed.
provided_otherwise() {
  case "$1" in
    postgresql) compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null ;;
    python3 | python3-venv)
      python3 -c 'import sys, venv, ensurepip; assert sys.version_info >= (3, 11)' >/dev/null 2>&1
      ;;
    nodejs) command -v node >/dev/null ;;
    npm) command -v npm >/dev/null ;;
    systemd) command -v systemd-analyze >/dev/null ;;
    *) return 1 ;;
  esac
}

CRATES_READ="" CRATES=""
crate_installed() {
  if [[ -z "$CRATES_READ" ]]; then
    CRATES="$(cargo install --list 2>/dev/null || true)"
    CRATES_READ=1
  fi
  grep -q "^$1 v" <<<"$CRATES"
}

add_unique() { # ARRAY_NAME VALUE
  local -n arr="$1"
  [[ " ${arr[*]} " == *" $2 "* ]] || arr+=("$2")
}

MISSING_APT=() MISSING_CRATES=()
find_missing() {
  local i name
  MISSING_APT=() MISSING_CRATES=() CRATES_READ=""
  for i in "${SEL[@]}"; do
    name="${NAMES[i]}"
    case "${KINDS[i]}" in
      apt) dpkg_installed "$name" || add_unique MISSING_APT "$name" ;;
      apt-base) dpkg_installed "$name" || provided_otherwise "$name" || add_unique MISSING_APT "$name" ;;
      cargo) crate_installed "$name" || add_unique MISSING_CRATES "$name" ;;
    esac
  done
}

# --------------------------------------------------------------------------------------------
# Running apt-get
# --------------------------------------------------------------------------------------------
SUDO=()
privileged() { [[ -n "${TASKER_SUDO+set}" ]] || is_root; }

# $1: the apt-get command line a user without root should run instead.
need_apt() {
  if [[ -n "${TASKER_SUDO+set}" ]]; then
    read -ra SUDO <<<"$TASKER_SUDO"
  elif ! is_root; then
    die "not root, so not running apt-get. Run: sudo apt-get $1   (or set TASKER_SUDO=sudo to let the scripts do it)"
  fi
  command -v apt-get >/dev/null || die "no apt-get on this machine; do by hand what this would do: apt-get $1"
}

# One install or removal at a time per machine (take_lock leaves the descriptor in LOCK_FD).
take_deps_lock() {
  local file="$LOCK_FILE"
  mkdir -p "$(dirname "$file")" 2>/dev/null || true
  if [[ ! -w "$file" ]] && [[ -e "$file" || ! -w "$(dirname "$file")" ]]; then
    file="$STATE/run/deps.lock"   # somebody else's lock file we cannot open: lock per checkout
    mkdir -p "$STATE/run"
  fi
  take_lock "$file" 1800 "$file has been locked for 30 minutes" \
    "waiting for another install or removal to finish (lock $file) ..."
}

MADE_POLICY=""
remove_policy_rc() {
  if [[ -n "$MADE_POLICY" ]]; then "${SUDO[@]}" rm -f "$POLICY_RC" || true; fi
}
trap remove_policy_rc EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Tell the packages' maintainer scripts not to start their system services (a broker on 5672, a
# PostgreSQL cluster on 5432): we run our own instances and must neither use nor clash with those.
block_services() {
  [[ -e "$POLICY_RC" ]] && return 0
  "${SUDO[@]}" mkdir -p "$(dirname "$POLICY_RC")"
  MADE_POLICY=1
  printf '#!/bin/sh\n# temporary, written by tasker cargo-make/ensure-deps.sh\nexit 101\n' \
    | "${SUDO[@]}" tee "$POLICY_RC" >/dev/null
  "${SUDO[@]}" chmod 755 "$POLICY_RC"
}

# Debian's postgresql package would otherwise create (and try to start) a "main" cluster on 5432.
# We never use it; a drop-in is read by pg_createcluster and is not a conffile, so it survives the
# install without dpkg prompts. Left in place afterwards, as before.
no_main_cluster() {
  local file="$CREATECLUSTER_DIR/tasker.conf"
  [[ -e "$file" ]] && return 0
  "${SUDO[@]}" mkdir -p "$CREATECLUSTER_DIR"
  printf '# written by tasker cargo-make/ensure-deps.sh: no system cluster, we run our own\ncreate_main_cluster = false\n' \
    | "${SUDO[@]}" tee "$file" >/dev/null
}

# apt-get ARGS..., quiet, output appended to the log. The lock's descriptor is closed for it so
# that nothing apt starts can hold the lock after we exit.
apt_run() {
  printf '\n[%s] apt-get %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*" >>"$LOG_FILE"
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q -y -o DPkg::Lock::Timeout=600 "$@" \
    </dev/null >>"$LOG_FILE" 2>&1 {LOCK_FD}>&-
}

installed_count() {
  # shellcheck disable=SC2016 # dpkg-query's format
  dpkg-query -W -f='${db:Status-Abbrev}\n' 2>/dev/null | grep -c '^ii' || true
}

# Refuse to pull packages from under running programs (on a shared machine: somebody's
# RabbitMQ, a demo's Ruby worker): `apt-get -s` names every package that would go, including
# what autoremove would take with it; any process whose executable is one of their files stops us.
guard_running() {
  (($#)) || return 0
  local doomed
  doomed="$(apt-get -s purge --autoremove "$@" 2>/dev/null | sed -n 's/^Purg \([^ ]*\).*/\1/p' || true)"
  [[ -n "$doomed" ]] || return 0
  local users
  # shellcheck disable=SC2086 # one package name a word
  users="$(
    for exe in /proc/[0-9]*/exe; do
      target="$(readlink "$exe" 2>/dev/null)" || continue
      pid="${exe#/proc/}"
      printf '%s %s\n' "${pid%/exe}" "${target% (deleted)}"
    done | awk 'NR == FNR { owned[$0] = 1; next }
                ($2 in owned) || (substr($2, 1, 4) == "/usr" && substr($2, 5) in owned) { printf "pid %s (%s); ", $1, $2 }' \
      <(dpkg -L $doomed 2>/dev/null) -
  )"
  [[ -z "$users" ]] || die "not removing $*: running programs use files of packages that would go: ${users%; }. Stop them first (bin/dev stop in their checkout)."
}

# --------------------------------------------------------------------------------------------
# Commands
# --------------------------------------------------------------------------------------------
cmd_ensure() {
  local started t name
  started="$(now_ms)"
  select_entries "$@"
  find_missing
  if ((${#MISSING_APT[@]} + ${#MISSING_CRATES[@]} == 0)); then
    log "$*: nothing missing (${#SEL[@]} checked in $(since "$started"))"
    return 0
  fi
  ((${#MISSING_APT[@]} == 0)) || need_apt "install -y ${MISSING_APT[*]}"
  mkdir -p "$(dirname "$LOG_FILE")"
  take_deps_lock
  find_missing   # again: another run may have installed some while we waited for the lock
  local done_list=("${MISSING_APT[@]}" "${MISSING_CRATES[@]}")
  if ((${#MISSING_APT[@]})); then
    block_services
    for name in "${MISSING_APT[@]}"; do
      [[ "$name" != postgresql* ]] || no_main_cluster
    done
    log "installing ${MISSING_APT[*]} with apt-get (log $LOG_FILE) ..."
    t="$(now_ms)"
    apt_run update || { show_log_tail "$LOG_FILE" 20; die "apt-get update failed; nothing installed (needed: ${MISSING_APT[*]})"; }
    log "apt-get update in $(since "$t")"
    for name in "${MISSING_APT[@]}"; do
      t="$(now_ms)"
      apt_run install --no-install-recommends "$name" \
        || { show_log_tail "$LOG_FILE" 20; die "could not install $name: apt-get install $name failed (log $LOG_FILE)"; }
      dpkg_installed "$name" || die "could not install $name: apt-get succeeded but dpkg-query says: $(dpkg_status "$name")"
      log "installed $name in $(since "$t")"
    done
  fi
  for name in "${MISSING_CRATES[@]}"; do
    command -v cargo >/dev/null || die "could not install $name: cargo is not on PATH"
    log "installing $name: cargo install --locked $name (compiles it: minutes; log $LOG_FILE) ..."
    t="$(now_ms)"
    printf '\n[%s] cargo install --locked %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$name" >>"$LOG_FILE"
    cargo install --locked "$name" </dev/null >>"$LOG_FILE" 2>&1 {LOCK_FD}>&- \
      || { show_log_tail "$LOG_FILE" 20; die "could not install $name: cargo install --locked $name failed (log $LOG_FILE)"; }
    log "installed $name in $(since "$t")"
  done
  log "$*: installed ${done_list[*]:-nothing (another run just did)} in $(since "$started")"
}

cmd_remove() {
  local clear_caches="$1" started t i name status purge=() crates=()
  shift
  started="$(now_ms)"
  select_entries "$@"
  for i in "${SEL[@]}"; do
    name="${NAMES[i]}"
    case "${KINDS[i]}" in
      apt)
        status="$(dpkg_status "$name")"
        if [[ -n "$status" && "$status" != *not-installed ]]; then add_unique purge "$name"; fi
        ;;
      cargo) crate_installed "$name" && add_unique crates "$name" ;;
      apt-base) ;;   # what a fresh machine has: never removed
    esac
  done
  local listed=("${purge[@]}" "${crates[@]}")
  log "removing what the groups ($*) install: ${listed[*]:-none of it is installed} (from $DEPS_FILE)"
  mkdir -p "$(dirname "$LOG_FILE")"
  # autoremove even when nothing listed is installed: a half-finished earlier removal may have
  # left what those packages pulled in.
  if ((${#purge[@]})) || privileged; then
    need_apt "purge -y ${purge[*]} && sudo apt-get autoremove --purge -y"
    guard_running "${purge[@]}"
    take_deps_lock
    block_services
    local before removed_others
    before="$(installed_count)"
    t="$(now_ms)"
    if ((${#purge[@]})); then
      apt_run purge "${purge[@]}" || { show_log_tail "$LOG_FILE" 20; die "apt-get purge ${purge[*]} failed (log $LOG_FILE)"; }
    fi
    apt_run autoremove --purge || { show_log_tail "$LOG_FILE" 20; die "apt-get autoremove --purge failed (log $LOG_FILE)"; }
    removed_others=$((before - $(installed_count) - ${#purge[@]}))
    ((removed_others >= 0)) || removed_others=0
    log "removed ${purge[*]:-none of the listed packages} and $removed_others packages they had pulled in, in $(since "$t")"
  fi
  for name in "${crates[@]}"; do
    t="$(now_ms)"
    [[ -n "$LOCK_FD" ]] || take_deps_lock
    cargo uninstall "$name" >>"$LOG_FILE" 2>&1 || { show_log_tail "$LOG_FILE" 20; die "cargo uninstall $name failed"; }
    log "removed crate $name (cargo uninstall) in $(since "$t")"
  done
  if [[ -n "$clear_caches" ]]; then
    t="$(now_ms)"
    if command -v python3 >/dev/null; then python3 -m pip cache purge >>"$LOG_FILE" 2>&1 || true; fi
    if command -v npm >/dev/null; then npm cache clean --force >>"$LOG_FILE" 2>&1 || true; fi
    log "cleared pip's and npm's download caches in $(since "$t")"
  fi
  log "removal done in $(since "$started")"
}

show_help() { sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; }

case "${1:-}" in
  "" | -h | --help)
    show_help
    [[ -n "${1:-}" ]] || exit 2
    ;;
  --remove)
    shift
    (($#)) || die "--remove needs at least one group"
    read_list
    cmd_remove "" "$@"
    ;;
  --remove-all)
    read_list
    # shellcheck disable=SC2046 # group names are single words
    cmd_remove 1 $(all_groups)
    ;;
  -*) die "unknown option $1 (see $0 --help)" ;;
  *)
    read_list
    cmd_ensure "$@"
    ;;
esac
