# Sourced by the shell tests. start_naa_server SERVER DIR starts the naa-server binary SERVER
# on 127.0.0.1 and an ephemeral port (written to DIR/port), waits until it listens, and sets
# naa_server_pid and naa_port. The caller's EXIT trap stops it (stop_naa_server).
naa_server_pid=
naa_port=

start_naa_server() {
  "$1" --address 127.0.0.1 --port 0 --ready-file "$2/port" &
  naa_server_pid=$!
  naa_i=0
  until [ -s "$2/port" ]; do
    naa_i=$((naa_i + 1)); [ $naa_i -le 1000 ] || { echo "naa-server did not start" >&2; return 1; }
    kill -0 "$naa_server_pid" 2>/dev/null || { echo "naa-server exited" >&2; return 1; }
    sleep 0.01
  done
  naa_port=$(cat "$2/port")
}

stop_naa_server() {
  if [ -n "$naa_server_pid" ]; then
    kill "$naa_server_pid" 2>/dev/null
    wait "$naa_server_pid" 2>/dev/null
    naa_server_pid=
  fi
  return 0
}
