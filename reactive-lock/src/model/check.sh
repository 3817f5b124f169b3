#!/usr/bin/env bash
# Checks the protocol model with spin: ./check.sh <work dir> [model] [-D... spin defines]
# Prints pan's report; exit status 0 if pan ran (its "errors:" line says whether a property broke).
set -euo pipefail
work=$1; model=${2:-lock}; shift 2 || shift $#
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work"; cd "$work"
cp "$here/$model.pml" .
spin "$@" -a "$model.pml" >/dev/null
bfs=""
[ "${SHORTEST:-}" = 1 ] && bfs=-DBFS   # the shortest counterexample (slower)
gcc -O2 -w -DSAFETY -DCOLLAPSE $bfs -o pan pan.c
./pan -m100000 -w24 -c1 | grep -vE '^\s+(lock|fair|semaphore|rwlock|multilock)\.pml:|^\s*\(|unreached|^\s*$'
if [ -f "$model.pml.trail" ]; then
  echo "== counterexample (spin -t)"
  spin "$@" -t -r -s -p -g "$model.pml" | grep -E 'proc|assert|now =' | grep -vE 'Clock\(|^\s*$' | tail -n 40 || true
fi
