#!/usr/bin/env bash
# The `tls` tests against a second PostgreSQL and a second MariaDB that speak TLS only: certificates made for the
# run (a CA, the server's for `localhost`, a client's for role `certuser`, and a CA that signed none of them), each
# server in a temporary folder on 127.0.0.1 with a port of its own, the tests, the servers stopped and the folder
# removed. The machine's own PostgreSQL (5432) and MariaDB (3306), without TLS, are left alone.
# Usage: bash scripts/pg_tls.sh [PYTEST]   (PYTEST defaults to .venv/bin/pytest; run from anywhere)
set -euo pipefail
. "$(dirname "$0")/wait_port.sh"
cd "$(dirname "$0")/.."
PYTEST=${1:-.venv/bin/pytest}
PORT=${SOPHROSYNE_TLS_PG_PORT:-55432}
MARIADB_PORT=${SOPHROSYNE_TLS_MARIADB_PORT:-53306}
BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
# initdb refuses to run as root: the cluster is the postgres user's.
AS=()
if [ "$(id -u)" = 0 ]; then AS=(runuser -u postgres --); fi

RUN=$(mktemp -d)
chmod 755 "$RUN"
MARIADB=
stop() {
  "${AS[@]}" "$BIN/pg_ctl" -D "$RUN/data" -m immediate stop >/dev/null 2>&1 || true
  if [ -n "$MARIADB" ]; then kill "$MARIADB" 2>/dev/null || true; wait "$MARIADB" 2>/dev/null || true; fi
  rm -rf "$RUN"
}
trap stop EXIT

# Certificates: made for this run, never kept.
C="$RUN/certs"
mkdir -p "$C"
make_ca() {  # NAME
  openssl req -x509 -new -newkey rsa:2048 -nodes -days 2 -subj "/CN=sophrosyne test $1" \
    -keyout "$C/$1.key" -out "$C/$1.crt" 2>/dev/null
}
make_cert() {  # NAME CN EXTENSIONS
  openssl req -new -newkey rsa:2048 -nodes -subj "/CN=$2" -keyout "$C/$1.key" -out "$C/$1.csr" 2>/dev/null
  openssl x509 -req -in "$C/$1.csr" -CA "$C/ca.crt" -CAkey "$C/ca.key" -CAcreateserial -days 2 \
    -extfile <(printf '%s\n' "$3") -out "$C/$1.crt" 2>/dev/null
}
make_ca ca
make_ca other-ca
make_cert server localhost "subjectAltName=DNS:localhost"
make_cert client certuser "extendedKeyUsage=clientAuth"
chmod 600 "$C"/*.key
chmod 644 "$C"/*.crt

# The server's files (cluster, log, socket) are the postgres user's.
mkdir -p "$RUN/data" "$RUN/server"
chown postgres "$RUN/data" "$RUN/server" 2>/dev/null || true
"${AS[@]}" "$BIN/initdb" -D "$RUN/data" -U postgres --auth=trust >"$RUN/initdb.log" 2>&1 || {
  cat "$RUN/initdb.log"; echo "pg_tls: initdb failed"; exit 1; }
install -m 600 "$C/server.key" "$RUN/data/server.key"
install -m 644 "$C/server.crt" "$RUN/data/server.crt"
install -m 644 "$C/ca.crt" "$RUN/data/ca.crt"
chown postgres "$RUN/data/server.key" "$RUN/data/server.crt" "$RUN/data/ca.crt" 2>/dev/null || true
# TLS only (no `host` line: a connection without TLS is refused); `certuser` logs in by its client certificate.
cat >"$RUN/data/pg_hba.conf" <<HBA
local all all trust
hostssl all certuser 127.0.0.1/32 cert
hostssl all all 127.0.0.1/32 trust
HBA
"${AS[@]}" "$BIN/pg_ctl" -D "$RUN/data" -l "$RUN/server/log" -w -t 30 \
  -o "-p $PORT -k $RUN/server -c listen_addresses=127.0.0.1 -c ssl=on -c ssl_cert_file=server.crt -c ssl_key_file=server.key -c ssl_ca_file=ca.crt" \
  start >/dev/null || { cat "$RUN/server/log"; echo "pg_tls: the server did not start"; exit 1; }
"${AS[@]}" "$BIN/psql" -h "$RUN/server" -p "$PORT" -U postgres -q -c "CREATE ROLE certuser LOGIN" \
  -c "CREATE TABLE items (id integer PRIMARY KEY, name text)" -c "INSERT INTO items VALUES (1, 'tls'), (2, 'ok')" \
  -c "GRANT SELECT ON items TO certuser" postgres
echo "pg_tls: PostgreSQL with TLS on 127.0.0.1:$PORT (certificates in $C)"

# MariaDB: any user logs in (no grant tables: only TLS is tested here).
M="$RUN/mariadb"
mkdir -p "$M/data"
install -m 600 "$C/server.key" "$M/server.key"
chown -R mysql "$M" 2>/dev/null || true
mariadb-install-db --user=mysql --datadir="$M/data" --skip-test-db --auth-root-authentication-method=normal \
  >"$M/install.log" 2>&1 || { cat "$M/install.log"; echo "pg_tls: mariadb-install-db failed"; exit 1; }
/usr/sbin/mariadbd --no-defaults --user=mysql --datadir="$M/data" --bind-address=127.0.0.1 --port="$MARIADB_PORT" \
  --socket="$M/sock" --pid-file="$M/pid" --skip-grant-tables \
  --ssl-ca="$C/ca.crt" --ssl-cert="$C/server.crt" --ssl-key="$M/server.key" --log-error="$M/log" &
MARIADB=$!
wait_port "pg_tls: mariadbd" "$MARIADB_PORT" "$MARIADB" "$M/log" 100 0.2 || exit 1
echo "pg_tls: MariaDB with TLS on 127.0.0.1:$MARIADB_PORT"

status=0
SOPHROSYNE_TEST_PG_TLS="$C" SOPHROSYNE_TEST_PG_TLS_PORT="$PORT" SOPHROSYNE_TEST_MARIADB_TLS_PORT="$MARIADB_PORT" \
  "$PYTEST" -m tls -n 0 || status=$?
exit $status
