#!/usr/bin/env bash
# The Python client's tests (clients/python): builds ragd from this
# checkout, installs ragd-client with its LangChain, LlamaIndex and test
# extras into a virtualenv kept in the cache, builds the wheel, and runs
# pytest against a live ragd (the tests start it). scripts/test.sh runs it.
#
#   scripts/test-python.sh            install what is missing, then test
#   scripts/test-python.sh --install  only install (.ci/run does it while
#                                     the services start)
#
#   RAG_CACHE_DIR   cache root (default ~/.cache/ragd): the virtualenv and
#                   pip's download cache live under it, reused across runs
set -euo pipefail
cd "$(dirname "$0")/.."
: "${HOME:=$(getent passwd "$(id -u)" | cut -d: -f6)}"
CACHE=${RAG_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ragd}
py=$(command -v python3 || true)
if [ -z "$py" ]; then
  echo "test-python: python3 is not on PATH" >&2
  exit 1
fi
# One virtualenv per pyproject.toml content, so a changed dependency gets a
# fresh one and an unchanged one is reused.
key=$(cat clients/python/pyproject.toml | sha256sum | cut -c1-12)
venv=$CACHE/python-client/venv-$key
export PIP_CACHE_DIR=$CACHE/pip
export PIP_DISABLE_PIP_VERSION_CHECK=1
if [ ! -x "$venv/bin/pytest" ]; then
  rm -rf "$CACHE/python-client"
  mkdir -p "$CACHE/python-client"
  "$py" -m venv "$venv"
  "$venv/bin/pip" install -q -e 'clients/python[langchain,llama-index,test]'
else
  # The package itself is installed editable: only its metadata can age.
  "$venv/bin/pip" install -q --no-deps -e clients/python
fi

[ "${1:-}" = --install ] && exit 0

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "== python: building ragd and the ragd-client wheel"
go build -o "$tmp/ragd" ./cmd/ragd
"$venv/bin/pip" wheel -q --no-deps -w "$tmp/dist" clients/python
ls "$tmp"/dist/ragd_client-*.whl
echo "== python: pytest"
RAGD_BIN=$tmp/ragd "$venv/bin/pytest" -q -p no:cacheprovider clients/python/tests
