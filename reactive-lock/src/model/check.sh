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
opt=-O2
case " $* " in *" -DBUG_"*) opt=-O0 ;; esac   # a seeded bug is found in a few seconds: compile fast instead
case "$model $*" in redlock*-DBUG_*) bfs=-DBFS ;; esac   # its counterexamples need a client to wait for the clock, which depth-first reaches last
collapse=-DCOLLAPSE
[ "$model" = redlock ] && collapse=""   # its states compress little: COLLAPSE took 40 % more time to save 4 % of the memory
gcc $opt -w -DSAFETY $collapse $bfs -o pan pan.c
./pan -m100000 -w24 -c1 | grep -vE '^\s+(lock|fair|semaphore|rwlock|multilock|redlock)\.pml:|^\s*\(|unreached|^\s*$'
case $model in   # the steps a counterexample shows: those that change the lock, a lease, the clock (and the line)
  fair) steps='now = |lk_tok = |lk_exp = |hold\[i\] = |vu\[i\] = |fr_val = |g_gone\[t\]|q\[qn\] = t|nx = q|dl\[t\] = |g_left\[t\] = |g_handed = 1|handed\[j\] = |phase\[i\] = ' ;;
  semaphore) steps='now = |sc\[i\] = |kexp = |hold\[i\] = |vu\[i\] = ' ;;
  multilock) steps='now = |lk_tok\[[a-z]+\] = |lk_kind\[[a-z]+\] = |lk_exp\[[a-z]+\] = |hold\[i\] = |vu\[i\] = |fr_val\[n\] = |g_gone\[t\]' ;;
  redlock) steps='now = |lk\[[a-z0-9]+\] = [^ls]|lexp\[[a-z0-9]+\] = [^ls]|sw = 12|hold\[[a-z0-9]+\] = |vu\[[a-z0-9]+\] = |rkind\[[a-z0-9]+\] = [1-3]|q\[\(\([0-9]\*3\)\+[0-9]\)\] = 0|ry\[[a-z0-9]+\] = \(ry|rn\[[a-z0-9]+\] = \(rn|restarted = ' ;;
  rwlock) steps='now = |wtok = |rsc\[i\] = |wsc\[i\] = |fr_val = |hold\[i\] = |vu\[i\] = ' ;;
  *) steps='now = |lk_tok = |lk_kind = |lk_exp = |hold\[i\] = |vu\[i\] = |slp\[t\] = |fr_val = |back = |g_gone' ;;
esac
if [ -f "$model.pml.trail" ]; then
  echo "== counterexample (spin -t, the steps that change the lock, a lease or the clock)"
  spin "$@" -t -p "$model.pml" | grep -E "Error|failed assertion|\[($steps)" \
    | sed -E 's/^ *[0-9]+:\s+proc +([0-9]+) \(([A-Za-z]+):1\) [^[]*/\2 \1 /' | uniq | tail -n 40 || true
fi
