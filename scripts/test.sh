#!/usr/bin/env bash
# The project's one test command: gofmt check, go vet, staticcheck,
# go test -race with, beside it, the arm64 kernel tests (under qemu-user)
# and a short fuzzing run of the request decoders, the config parser and
# the kernels, and the Python client's tests (scripts/test-python.sh: the
# wheel and pytest against a live ragd).
#
# Integration tests find their servers through the RAG_TEST_* variables
# (eval "$(scripts/services.sh env)" after scripts/services.sh up); without
# them they skip, unless RAG_REQUIRE_INTEGRATION=1, where they fail.
# Extra arguments go to `go test` (e.g. scripts/test.sh -run Vector).
#
#   RAG_TEST_P    packages tested at once (default 4: most of the long
#                 integration tests wait on servers, not on the CPU)
#   RAG_FUZZTIME  fuzzing budget per target (default 20000x, a count of
#                 executions; 0 skips fuzzing). A count, not a duration:
#                 go1.26's fuzz coordinator can fail a duration-bounded run
#                 with "context deadline exceeded" when a loaded machine
#                 starves its workers at the deadline (go.dev/issue/75804,
#                 fixed in go1.27), which CI hit with no failing input.
set -euo pipefail
cd "$(dirname "$0")/.."

phase_start=0
phase() { phase_start=$(date +%s); echo "== $*"; }
phase_done() { echo "== $1 took $(($(date +%s) - phase_start))s"; }

phase "gofmt"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files --cached --others --exclude-standard -- '*.go')
else
  mapfile -t files < <(find . -name '*.go' -not -path './.git/*')
fi
unformatted=$(if [ ${#files[@]} -gt 0 ]; then gofmt -l "${files[@]}"; fi)
if [ -n "$unformatted" ]; then
  echo "gofmt: these files are not formatted (run gofmt -w):"
  echo "$unformatted" | sed 's/^/  /'
  exit 1
fi
phase_done gofmt

phase "go vet ./..."
go vet ./...
phase_done "go vet"

phase "staticcheck ./..."
# Pinned by the tool directive in go.mod; built once into the Go build cache.
go tool staticcheck ./...
phase_done staticcheck

# arm64: the model's kernels have NEON assembly of their own. Vet them for
# arm64 always; run under qemu-user (qemu-aarch64, which emulates a CPU
# with the dot-product extension, so the NEON int8 kernel runs too) what
# only arm64 can show: every kernel test, and the encoder on the tiny
# model, float32 and int8, against its numpy reference. Not the tests that
# run the full MiniLM model (TestReferenceVectors, TestBatchIndependence):
# under emulation they took about 4 minutes of CPU of their own, and the
# kernels they go through are the ones the kernel tests check on every
# shape class. They run natively in go test below.
arm64_skip='^(TestReferenceVectors|TestBatchIndependence)$'
arm64() {
  GOARCH=arm64 go vet ./embedder/... || return
  if ! command -v qemu-aarch64 >/dev/null; then
    echo "no qemu-aarch64: the arm64 kernels are vetted, not run (apt-get install qemu-user)"
    return
  fi
  local arm pkg rc=0
  arm=$(mktemp -d)
  for pkg in embedder/builtin/internal/kernel embedder/builtin/bert; do
    GOARCH=arm64 go test -c -o "$arm/t" "./$pkg" &&
      (cd "$pkg" && qemu-aarch64 "$arm/t" -test.count=1 -test.skip "$arm64_skip") || { rc=$?; break; }
  done
  rm -rf "$arm"
  return "$rc"
}

# Fuzz targets: package and target. Each run also replays the seeds and
# testdata/fuzz corpus, which plain go test runs too.
fuzz_targets=(
  "./config FuzzParse"
  "./api FuzzQueryHandler"
  "./api FuzzDocumentID"
  "./spi FuzzValidateName"
  "./backends/vector/embedded FuzzDotCodes"
  "./embedder/builtin/wordpiece FuzzEncode"
  "./embedder/builtin/internal/kernel FuzzGemm"
  "./embedder/builtin/internal/kernel FuzzGemmQ8"
)
fuzz() {
  local t pkg target
  for t in "${fuzz_targets[@]}"; do
    read -r pkg target <<<"$t"
    go test -run '^$' -fuzz "^$target\$" -fuzztime "$fuzztime" "$pkg" || return
  done
}

# The arm64 phase, then fuzzing, run beside go test -race, their output kept
# until the tests are done: the arm64 and the fuzzing builds (fuzzing's
# instruments every package of the target's closure again, which on a cold
# cache took longer than the fuzzing) and the runs use the CPU that the
# integration tests leave idle while they wait for servers.
fuzztime=${RAG_FUZZTIME:-20000x}
side_log=$(mktemp) py_log=$(mktemp)
trap 'rm -f "$side_log" "$py_log"' EXIT
side_start=$(date +%s)
(
  phase "arm64: go vet ./embedder/..., kernel tests under qemu-aarch64"
  rc=0
  arm64 || rc=$?
  phase_done arm64
  [ "$rc" = 0 ] || { echo "arm64 failed (exit $rc)"; exit "$rc"; }
  if [ "$fuzztime" != 0 ]; then
    phase "fuzz, $fuzztime per target: ${fuzz_targets[*]}"
    fuzz || rc=$?
    phase_done fuzz
  fi
  exit "$rc"
) >"$side_log" 2>&1 &
side_pid=$!

# The Python client's tests, beside go test too (their output kept until
# it is done): they mostly wait on the ragd they start.
(
  phase "python client tests (clients/python), alongside"
  rc=0
  scripts/test-python.sh || rc=$?
  phase_done "python client tests"
  exit "$rc"
) >"$py_log" 2>&1 &
py_pid=$!

phase "go test -race ./... (the Python client's tests, the arm64 phase and fuzzing, $fuzztime per target, alongside)"
test_rc=0
go test -race -p "${RAG_TEST_P:-4}" -timeout 45m "$@" ./... || test_rc=$?
phase_done "go test"

py_rc=0
wait "$py_pid" || py_rc=$?
cat "$py_log"

side_rc=0
wait "$side_pid" || side_rc=$?
grep -v '^fuzz: elapsed' "$side_log" || true
echo "== arm64 and fuzz, alongside: done $(($(date +%s) - side_start))s after they started"
[ "$test_rc" = 0 ] || { echo "go test -race failed (exit $test_rc)"; exit "$test_rc"; }
[ "$py_rc" = 0 ] || { echo "python client tests failed (exit $py_rc)"; exit "$py_rc"; }
[ "$side_rc" = 0 ] || { echo "arm64 or fuzzing failed (exit $side_rc)"; exit "$side_rc"; }
