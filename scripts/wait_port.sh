# Sourced by the CI scripts that start a server of their own (pg_tls.sh, ssh_ci.sh).
# wait_port NAME PORT PID LOG TRIES PAUSE: wait until 127.0.0.1:PORT accepts a connection, trying TRIES times PAUSE
# seconds apart; if the process PID exits first, print its LOG and fail.
wait_port() {
  local name=$1 port=$2 pid=$3 log=$4 tries=$5 pause=$6
  for _ in $(seq 1 "$tries"); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
    if ! kill -0 "$pid" 2>/dev/null; then cat "$log"; echo "$name exited"; return 1; fi
    sleep "$pause"
  done
}
