#!/usr/bin/env bash
# Captures the GIOP 1.1 fragment vectors (tests/vectors/giop-1.1-fragments):
# how omniORB's C++ library and omniORBpy each lay out blocks of 8-byte
# values cut by GIOP 1.1 fragment boundaries (see
# crates/armillary-giop/src/cdr/fragments/mod.rs). Each session is one
# client and one server of the same kind, talking GIOP 1.1 through
# giop_tap.py (tests/vectors/capture), which records every message:
#
#   omniorb-4.2    diff_peer sequences 1001 -> diff_peer serve (C++, Debian's 4.2)
#   omniorbpy-4.3  diff_peer.py issue25     -> diff_peer.py serve (omniORBpy 4.3.3)
#
#   scripts/capture-fragment-vectors.sh [OUT]   (default: tests/vectors/giop-1.1-fragments)
#
# Needs omniORB 4.2 (as scripts/test.sh installs it), make, g++, python3,
# and omniORBpy's virtual environment, which the test suite makes on first
# use (armillary_testkit::omniorbpy): run
# `cargo test -p armillary --test omniorbpy` once before.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=${1:-tests/vectors/giop-1.1-fragments}
mkdir -p "$out"
out=$(cd "$out" && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
peers=$target/interop-cpp
venv=$target/omniorbpy
tap_py=$root/tests/vectors/capture/giop_tap.py

if [ ! -f "$venv/installed" ]; then
  echo "error: no omniORBpy at $venv: run 'cargo test -p armillary --test omniorbpy' first" >&2
  exit 1
fi
stubs=$(ls -d "$venv"/stubs-* | head -1)

echo "== building the omniORB peers into $peers"
make -s -C tests/interop/cpp OUT="$peers"

# shellcheck source=../tests/vectors/capture/session.sh
. "$root/tests/vectors/capture/session.sh"

# A free loopback port for a server.
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# capture NAME LABEL SERVER-COMMAND... -- CLIENT-COMMAND...: one session
# into $out/NAME; the client gets the IOR file and GIOP 1.1 appended.
capture() {
  local name=$1 label=$2
  shift 2
  local server_cmd=() client_cmd=()
  while [ "$1" != "--" ]; do server_cmd+=("$1"); shift; done
  shift
  client_cmd=("$@")
  local dir=$out/$name run=$work/$name
  rm -rf "$dir" "$run"
  mkdir -p "$dir" "$run"
  python3 "$tap_py" --server-file "$run/server.addr" --port-file "$run/tap.port" \
    --out "$dir" --label "$name: $label" &
  tap=$!
  wait_for "$run/tap.port"
  local tap_port server_port
  tap_port=$(cat "$run/tap.port")
  server_port=$(free_port)
  "${server_cmd[@]}" --ior-file "$run/echo.ior" \
    -ORBendPoint "giop:tcp:127.0.0.1:$server_port" \
    -ORBendPointPublish "giop:tcp:127.0.0.1:$tap_port" >/dev/null 2>"$run/server.log" &
  server=$!
  wait_for "$run/echo.ior"
  echo "127.0.0.1:$server_port" >"$run/server.addr.tmp"
  mv "$run/server.addr.tmp" "$run/server.addr"
  local status=0
  "${client_cmd[@]}" -ORBmaxGIOPVersion 1.1 >"$dir/client-output.txt" || status=$?
  kill -TERM "$server"
  wait "$server" || true
  server=""
  kill -TERM "$tap"
  wait "$tap" || true
  tap=""
  echo "$name: $(ls "$dir" | grep -c '\.bin$') messages; client: $(tail -1 "$dir/client-output.txt")"
  if [ "$status" != 0 ]; then
    echo "error: the client failed in $name (see $dir/client-output.txt)" >&2
    exit 1
  fi
}

capture omniorb-4.2 "omniORB $(pkg-config --modversion omniORB4) diff_peer sequences 1001, GIOP 1.1" \
  "$peers/diff_peer" serve -- \
  "$peers/diff_peer" sequences "$work/omniorb-4.2/echo.ior" 1001
capture omniorbpy-4.3 "omniORBpy 4.3.3 diff_peer.py issue25, GIOP 1.1" \
  env PYTHONPATH="$stubs" "$venv/bin/python" "$root/tests/interop/python/diff_peer.py" serve -- \
  env PYTHONPATH="$stubs" "$venv/bin/python" "$root/tests/interop/python/diff_peer.py" issue25 \
  "$work/omniorbpy-4.3/echo.ior"
echo "== wrote $out"
