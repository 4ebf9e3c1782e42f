#!/usr/bin/env bash
# Prints the name of this machine's first GPU as the benchmark files it (bench/results/<name>,
# docs/<name>/ for a card other than the H200 the project reports on): h100, h200, or the model's
# name in lower case with dashes.
set -euo pipefail
model=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
case "$model" in
  *" H100"*) echo h100 ;;
  *" H200"*) echo h200 ;;
  *) echo "$model" | tr '[:upper:]' '[:lower:]' | sed 's/[^a-z0-9]\+/-/g; s/^-//; s/-$//' ;;
esac
