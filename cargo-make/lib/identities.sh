# shellcheck shell=bash
# Identities for the demo and cluster mode, sourced by cargo-make/demo.sh and cluster.sh: the
# orchestrator requires API tokens, and each worker gets credentials for its own namespace only.
#
#   make_identities DIR
#     - an admin token for the CLI and you, in DIR/admin.token and DIR/env
#       (`source DIR/env` sets TASKER_TOKEN and TASKER_URL for `tasker`, and
#       TASKER_WORKER__API_TOKEN and TASKER_AMQP_URL for a worker of your own: the broker
#       user `admin`, bound to the admin token, which may read every namespace's steps queue
#       and write results only);
#     - for each language L of rust ruby python typescript: a `write` token named worker-L for
#       the namespace L_examples, and the broker user of the same name, which may read only
#       that namespace's steps queue and write only results (services.sh worker-users): the
#       orchestrator accepts its results for that namespace only. Sets IDENTITY_TOKEN[L] and
#       IDENTITY_AMQP[L] (its AMQP URL);
#     - the orchestrators' own broker user, tasker-orchestrator, instead of `guest` (RabbitMQ's
#       default administrator, whose password every local process knows): it may declare, read
#       and write the queue prefix's objects only (services.sh orchestrator-user). Sets
#       ORCHESTRATOR_AMQP (its AMQP URL).
#   worker_env L   prints the `env` arguments that start L's worker with its identity.
#   orchestrator_env  prints the `env` arguments that start an orchestrator with its identity.
#
# Each run replaces the tokens and passwords of the run before (tokens of the same name are
# revoked first). Needs BIN_DIR (the release binaries), DATABASE_URL, AMQP_URL and ORCH_URL, and
# the repository root as the current folder (both callers run there).

declare -A IDENTITY_TOKEN=() IDENTITY_AMQP=()
ORCHESTRATOR_AMQP=""

# A token NAME of SCOPE (for NAMESPACES, if given), replacing a live one of that name; printed.
identity_token() {
  local name="$1" scope="$2" namespaces="${3:-}"
  "$BIN_DIR/tasker-orchestrator" token revoke "$name" >/dev/null 2>&1 || true
  if [[ -n "$namespaces" ]]; then
    "$BIN_DIR/tasker-orchestrator" token create "$name" --scope "$scope" --namespaces "$namespaces" 2>/dev/null
  else
    "$BIN_DIR/tasker-orchestrator" token create "$name" --scope "$scope" 2>/dev/null
  fi
}

make_identities() {
  local dir="$1" lang users=() name url admin
  mkdir -p "$dir"
  chmod 700 "$dir"
  admin="$(identity_token admin admin)" || return 1
  (umask 077 && printf '%s\n' "$admin" >"$dir/admin.token")
  for lang in rust ruby python typescript; do
    IDENTITY_TOKEN[$lang]="$(identity_token "worker-$lang" write "${lang}_examples")" || return 1
    users+=("worker-$lang=${lang}_examples")
  done
  # A worker of the user's own (README "Your first workflow") speaks as the admin token's broker
  # user, `admin`: it may read any namespace's steps queue and write results, and the
  # orchestrator trusts its results as far as that token reaches (every namespace).
  users+=("admin=*")
  local urls prefix="${TASKER_QUEUE_PREFIX:-tasker}" own_amqp="${AMQP_URL:-}"
  if urls="$(cargo-make/services.sh worker-users "$prefix" "${users[@]}" 2>&1)"; then
    while read -r name url; do
      if [[ "$name" == admin ]]; then own_amqp="$url"; else IDENTITY_AMQP[${name#worker-}]="$url"; fi
    done <<<"$urls"
    urls="$(cargo-make/services.sh orchestrator-user "$prefix" tasker-orchestrator)" || return 1
    ORCHESTRATOR_AMQP="${urls#* }"
  else
    # An external broker (AMQP_URL set): its users are its operator's to make (docs/auth.md).
    printf 'identities: no broker user per worker (%s); the workers and orchestrators share AMQP_URL\n' "$urls" >&2
    for lang in rust ruby python typescript; do IDENTITY_AMQP[$lang]="$AMQP_URL"; done
    ORCHESTRATOR_AMQP="$AMQP_URL"
  fi
  # The CLI's token; a worker of the user's own gets it too, with the broker user above.
  (umask 077 && printf 'export TASKER_URL=%q\nexport TASKER_TOKEN=%q\nexport TASKER_WORKER__API_TOKEN=%q\nexport TASKER_AMQP_URL=%q\n' \
    "$ORCH_URL" "$admin" "$admin" "$own_amqp" >"$dir/env")
}

worker_env() {
  printf '%s\n' "AMQP_URL=${IDENTITY_AMQP[$1]}" "TASKER_WORKER__API_TOKEN=${IDENTITY_TOKEN[$1]}"
}

orchestrator_env() {
  printf '%s\n' "AMQP_URL=$ORCHESTRATOR_AMQP"
}
