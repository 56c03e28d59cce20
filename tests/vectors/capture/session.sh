# What the capture scripts (scripts/capture-vectors.sh,
# scripts/capture-fragment-vectors.sh) share, sourced by them: a scratch
# directory, the tap and server of the session under way (empty once
# reaped), ended if the script stops early, and a bounded wait for a file.

work=$(mktemp -d)
tap=""
server=""
cleanup() {
  for pid in $server $tap; do
    kill "$pid" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT

# Waits up to 20 s for a file to exist.
wait_for() {
  for _ in $(seq 200); do
    [ -s "$1" ] && return 0
    sleep 0.1
  done
  echo "error: $1 never appeared" >&2
  return 1
}
