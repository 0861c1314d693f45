# shellcheck shell=bash
# TLS material for cargo-make/services.sh: a throwaway CA of this state folder and a server
# certificate it signs, for localhost and 127.0.0.1 (RabbitMQ's amqps:// listener, the TLS
# PostgreSQL, an https:// orchestrator in tests). Made once; `rm -rf .tasker/tls` makes new ones
# at the next start. Needs common.sh, and STATE (absolute) and LOG_DIR set before it is sourced.

TLS_DIR="$STATE/tls"

tls_material() {
  [[ -s "$TLS_DIR/ca.pem" && -s "$TLS_DIR/server.pem" && -s "$TLS_DIR/server.key" ]] && return 0
  command -v openssl >/dev/null || die "openssl is missing although ensure-deps.sh checked for it"
  mkdir -p "$TLS_DIR"
  local ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
  (
    cd "$TLS_DIR"
    openssl req -x509 "${ec[@]}" -keyout ca.key -out ca.pem -days 3650 \
      -subj "/CN=Tasker throwaway CA" \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
    openssl req "${ec[@]}" -keyout server.key -out server.csr -subj "/CN=localhost"
    printf '%s\n' "subjectAltName=DNS:localhost,IP:127.0.0.1" "basicConstraints=critical,CA:FALSE" \
      "keyUsage=critical,digitalSignature" "extendedKeyUsage=serverAuth" >server.ext
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 825 \
      -extfile server.ext -out server.pem
    rm -f server.csr server.ext ca.srl
  ) >"$LOG_DIR/tls.log" 2>&1 || { show_log_tail "$LOG_DIR/tls.log"; die "openssl could not make the TLS material"; }
  # Tests and clients read the CA and the certificate; the keys stay with this user.
  chmod 755 "$TLS_DIR"
  chmod 644 "$TLS_DIR/ca.pem" "$TLS_DIR/server.pem"
  chmod 600 "$TLS_DIR/ca.key" "$TLS_DIR/server.key"
  log "tls: made a throwaway CA and a certificate for localhost and 127.0.0.1 in $TLS_DIR"
}
