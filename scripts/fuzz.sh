#!/usr/bin/env bash
# Coverage-guided fuzzing of every target in fuzz/ (needs a nightly
# toolchain and `cargo install cargo-fuzz`): seeds each target's corpus
# from the omniORB captures, the IDL test files and fuzz/regressions, then
# runs each for SECONDS (default 60) and prints its executions. A crash
# leaves its input in fuzz/artifacts/TARGET/: add it to
# fuzz/regressions/TARGET/ with the fix.
#   scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(frame_decoder ior_parse typecode_any giop_message giop_body idl_frontend)
vectors="${ARMILLARY_VECTORS:-tests/vectors/omniorb-4.2}"

python3 - "$vectors" <<'PY'
import os, sys, hashlib
vectors = sys.argv[1]
def put(target, data):
    d = os.path.join("fuzz/corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)
captures, iors = [], []
if os.path.isdir(vectors):
    for session in sorted(os.listdir(vectors)):
        s = os.path.join(vectors, session)
        if not os.path.isdir(s):
            continue
        for name in sorted(os.listdir(s)):
            path = os.path.join(s, name)
            if name.endswith(".bin") and os.path.getsize(path) <= 64 * 1024:
                captures.append(open(path, "rb").read())
            elif name.endswith(".ior"):
                iors.append(open(path, "rb").read())
for m in captures:
    put("giop_message", m)
    put("frame_decoder", bytes([7, 64, 1, 200]) + m)
    # giop_body: a selector byte (type, version, byte order), then the body.
    if len(m) >= 12 and m[4] == 1 and m[5] <= 2 and m[6] <= 1 and m[7] <= 7:
        body = bytes([m[7] + 8 * m[5] + 24 * (m[6] & 1)]) + m[12:]
        put("giop_body", body)
        put("typecode_any", m[12:])
for i in iors:
    put("ior_parse", i)
for d in ("crates/armillary-idl/tests/valid", "crates/armillary-idl/tests/invalid"):
    for name in sorted(os.listdir(d)):
        if name.endswith(".idl"):
            put("idl_frontend", open(os.path.join(d, name), "rb").read())
PY

cd fuzz
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t"
  if [ -d "regressions/$t" ]; then
    find "regressions/$t" -type f ! -name '.*' -exec cp {} "corpus/$t/" \;
  fi
  log="$(mktemp)"
  if cargo +nightly fuzz run "$t" "corpus/$t" -- -max_total_time="$seconds" -rss_limit_mb=4096 >"$log" 2>&1; then
    status=ok
  else
    status=FAILED
  fi
  runs="$(grep -o 'Done [0-9]* runs' "$log" | tail -1 | grep -o '[0-9]*' || echo '?')"
  cov="$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || echo '?')"
  echo "$t: $status, $runs executions in ${seconds}s, coverage $cov"
  if [ "$status" = FAILED ]; then tail -40 "$log"; fi
  rm -f "$log"
done
