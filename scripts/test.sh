#!/usr/bin/env bash
# The whole test suite, on a fresh machine: installs what the tests need
# (Rust's stable toolchain is assumed; omniORB comes from Debian), then runs
# every test of the workspace. The README names this script; .ci/run calls it.
set -euo pipefail
cd "$(dirname "$0")/.."

need_omniorb=0
# valgrind comes with them: `armillary bench instructions` (and its test)
# counts instructions under callgrind.
for tool in omniidl catior omniNames nameclt valgrind callgrind_control; do
  command -v "$tool" >/dev/null 2>&1 || need_omniorb=1
done
[ -d /usr/include/omniORB4 ] || need_omniorb=1
[ -d /usr/share/idl/omniORB ] || need_omniorb=1
if [ "$need_omniorb" = 1 ]; then
  echo "== installing omniORB (libomniorb4-dev omniidl omniorb omniorb-idl omniorb-nameserver) and valgrind"
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq libomniorb4-dev omniidl omniorb omniorb-idl omniorb-nameserver pkg-config g++ valgrind >/dev/null
fi

# Java and Maven, for the JacORB peers (armillary_testkit::jacorb fetches
# JacORB from Maven Central and compiles tests/interop/java).
need_java=0
for tool in java javac mvn; do
  command -v "$tool" >/dev/null 2>&1 || need_java=1
done
if [ "$need_java" = 1 ]; then
  echo "== installing Java and Maven (default-jdk-headless maven)"
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq default-jdk-headless maven >/dev/null
fi

# omniORBpy 4.3 from PyPI, the second omniORB of the interop tests, in a
# virtual environment beside Cargo's output (armillary_testkit::omniorbpy
# uses it, and makes it itself when it is missing).
venv="${CARGO_TARGET_DIR:-target}/omniorbpy"
requirements=tests/interop/python/requirements.txt
if ! cmp -s "$requirements" "$venv/installed"; then
  echo "== installing omniORBpy 4.3 into $venv ($(grep -v '^#' "$requirements"))"
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
  cp "$requirements" "$venv/installed"
fi

# A test run builds from scratch (CI's fresh clone): incremental
# compilation would only add memory to the largest crate's build (the
# omniORB corpus's generated code, armillary-codegen-tests).
export CARGO_INCREMENTAL=0

echo "== cargo test --workspace"
cargo test --workspace --all-targets
cargo test --workspace --doc

echo "== cargo doc (every public item documented, no broken links)"
RUSTDOCFLAGS="-D missing_docs -D rustdoc::broken_intra_doc_links" cargo doc --workspace --no-deps
