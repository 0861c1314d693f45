# shellcheck shell=bash
# Keeping the services' ports free for them (cargo-make/services.sh). Needs common.sh.

# Is port $1 inside the kernel's port list $2 ("a,b-c,...")?
in_port_list() {
  local port="$1" item items
  IFS=, read -ra items <<<"$2"
  for item in "${items[@]}"; do
    item="${item// /}"
    if [[ "$item" == *-* ]]; then
      if ((port >= ${item%-*} && port <= ${item#*-})); then return 0; fi
    elif [[ -n "$item" ]] && ((port == item)); then
      return 0
    fi
  done
  return 1
}

# Our default ports (55432, 55672...) lie inside Linux's ephemeral range (32768-60999): any
# outgoing connection on the machine may get one as its source port, and until that socket (or its
# 60 s TIME_WAIT) is gone the server cannot bind it ("Address already in use" with nothing
# listening). Seen for real: an epmd client connection took 56432. As root, reserve our ports so
# the kernel never hands them out automatically (explicit binds still work); not persistent, so
# done on every start. Not root: nothing we can do; the bind error then says what happened.
reserve_ports() {
  local file=/proc/sys/net/ipv4/ip_local_reserved_ports current port missing=()
  is_root && [[ -w "$file" ]] || return 0
  current="$(cat "$file")"
  for port in "$@"; do
    in_port_list "$port" "$current" || missing+=("$port")
  done
  ((${#missing[@]} > 0)) || return 0
  local joined
  joined="$(IFS=,; echo "${missing[*]}")"
  if echo "${current:+$current,}$joined" >"$file" 2>/dev/null; then
    log "reserved ports $joined (net.ipv4.ip_local_reserved_ports) so no outgoing connection takes them"
  else
    log "warning: could not reserve ports $joined in $file"
  fi
}
