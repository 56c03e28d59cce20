#!/usr/bin/env bash
# Captures the omniORB GIOP sessions the tests read (tests/vectors/omniorb-4.2)
# again from omniORB itself: for each session, omniORB's echo_server and
# echo_client (tests/vectors/capture, IDL vectors.idl) talk through
# giop_tap.py, a recording proxy on 127.0.0.1, which writes every message
# and an index.json describing it. tests/vectors/README.md explains the
# format and what differs from one capture to the next.
#
#   scripts/capture-vectors.sh [OUT]     (default: tests/vectors/omniorb-4.2)
#
# Needs omniORB 4.2 (omniidl, headers, libraries), make, a C++ compiler and
# python3. To run the tests on a capture elsewhere:
#   ARMILLARY_VECTORS=$PWD/OUT cargo test -p armillary-giop -p armillary-cli
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=${1:-tests/vectors/omniorb-4.2}
mkdir -p "$out"
out=$(cd "$out" && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
build=$target/vectors-capture
capture=$root/tests/vectors/capture

echo "== building the omniORB peers into $build"
make -s -C "$capture" OUT="$build"
omniorb=$(pkg-config --modversion omniORB4)

# shellcheck source=../tests/vectors/capture/session.sh
. "$root/tests/vectors/capture/session.sh"

# capture NAME CLIENT-ARGS...: one client session into $out/NAME.
capture() {
  local name=$1
  shift
  local dir=$out/$name run=$work/$name
  rm -rf "$dir" "$run"
  mkdir -p "$dir" "$run"
  python3 "$capture/giop_tap.py" --server-file "$run/server.addr" \
    --port-file "$run/tap.port" --out "$dir" \
    --label "$name: omniORB $omniorb echo_client $*" &
  tap=$!
  wait_for "$run/tap.port"
  local tap_port
  tap_port=$(cat "$run/tap.port")
  # The server listens on a port of its own and publishes the tap's in its
  # IORs; its trace (level 25) names the port it got.
  "$build/echo_server" --ior-dir "$run" \
    -ORBendPoint giop:tcp:127.0.0.1:0 \
    -ORBendPointPublish "giop:tcp:127.0.0.1:$tap_port" \
    -ORBtraceLevel 25 >"$dir/server-output.txt" 2>"$run/server.log" &
  server=$!
  wait_for "$run/types.ior"
  local server_addr
  server_addr=$(sed -n 's/.*for endpoint giop:tcp:\([0-9.]*:[0-9]*\).*/\1/p' "$run/server.log" | head -1)
  if [ -z "$server_addr" ]; then
    echo "error: the server's trace names no endpoint (see $run/server.log)" >&2
    exit 1
  fi
  echo "$server_addr" >"$run/server.addr.tmp"
  mv "$run/server.addr.tmp" "$run/server.addr"
  local status=0
  "$build/echo_client" --ior-dir "$run" --address "127.0.0.1:$tap_port" "$@" \
    >"$dir/client-output.txt" || status=$?
  kill -TERM "$server"
  wait "$server" || true
  server=""
  kill -TERM "$tap"
  wait "$tap" || true
  tap=""
  cp "$run"/echo.ior "$run"/quoter.ior "$run"/types.ior "$dir/"
  local count
  count=$(ls "$dir" | grep -c '\.bin$' || true)
  echo "$name: $count messages; client: $(tail -1 "$dir/client-output.txt")"
  if [ "$status" != 0 ]; then
    echo "error: the client failed in $name (see $dir/client-output.txt)" >&2
    exit 1
  fi
}

for v in 1.0 1.1 1.2; do
  capture "giop-$v" --session -ORBmaxGIOPVersion "$v"
  capture "giop-$v-noverify" --session nonexist -ORBverifyObjectExistsAndType 0 -ORBmaxGIOPVersion "$v"
  capture "giop-$v-big" --session big --big 1048576 -ORBmaxGIOPVersion "$v"
  capture "giop-$v-bigshape" --session bigshape --big 2000 -ORBmaxGIOPVersion "$v"
done

python3 "$capture/vectors_summary.py" "$out"
echo "== wrote $out (and its SUMMARY.md)"
