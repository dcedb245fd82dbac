#!/usr/bin/env bash
# The `ssh` tests through a real OpenSSH server: Debian's openssh-server installed if absent, a host key and a
# client key made for the run, sshd on 127.0.0.1 with a port of its own (TCP forwarding on, public keys only), the
# tests (sources behind the tunnel on the machine's PostgreSQL and MariaDB), sshd stopped by its PID.
# Usage: bash scripts/ssh_ci.sh [PYTEST]   (PYTEST defaults to .venv/bin/pytest; run from anywhere)
set -euo pipefail
. "$(dirname "$0")/wait_port.sh"
cd "$(dirname "$0")/.."
PYTEST=${1:-.venv/bin/pytest}
PORT=${SOPHROSYNE_SSH_PORT:-52222}

if [ ! -x /usr/sbin/sshd ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends openssh-server >/dev/null
fi
mkdir -p /run/sshd  # sshd's privilege separation folder

RUN=$(mktemp -d)
SERVER=
stop() {
  if [ -n "$SERVER" ]; then kill "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true; fi
  rm -rf "$RUN"
}
trap stop EXIT

ssh-keygen -q -t ed25519 -N '' -C 'sophrosyne test host' -f "$RUN/host_key"
ssh-keygen -q -t ed25519 -N '' -C 'sophrosyne test client' -f "$RUN/client_key"
ssh-keygen -q -t ed25519 -N '' -C 'another host' -f "$RUN/other_host_key"
cp "$RUN/client_key.pub" "$RUN/authorized_keys"
chmod 600 "$RUN/authorized_keys"
# What the client knows of the server: its key, and (for the refusal test) another key under the same name.
echo "[127.0.0.1]:$PORT $(cut -d' ' -f1,2 "$RUN/host_key.pub")" >"$RUN/known_hosts"
echo "[127.0.0.1]:$PORT $(cut -d' ' -f1,2 "$RUN/other_host_key.pub")" >"$RUN/wrong_known_hosts"
cat >"$RUN/sshd_config" <<CONF
ListenAddress 127.0.0.1
Port $PORT
HostKey $RUN/host_key
PidFile $RUN/sshd.pid
AuthorizedKeysFile $RUN/authorized_keys
AuthenticationMethods publickey
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
StrictModes no
UsePAM no
AllowTcpForwarding local
PermitOpen 127.0.0.1:5432 127.0.0.1:3306
X11Forwarding no
PermitTTY no
CONF
/usr/sbin/sshd -D -e -f "$RUN/sshd_config" 2>"$RUN/sshd.log" &
SERVER=$!
wait_port "ssh: sshd" "$PORT" "$SERVER" "$RUN/sshd.log" 50 0.1 || exit 1
echo "ssh: sshd (pid $SERVER) on 127.0.0.1:$PORT"

status=0
SOPHROSYNE_TEST_SSH="$RUN" SOPHROSYNE_TEST_SSH_PORT="$PORT" SOPHROSYNE_TEST_SSH_PID="$SERVER" \
  "$PYTEST" -m ssh -n 0 || status=$?
exit $status
