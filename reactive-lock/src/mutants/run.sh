#!/usr/bin/env bash
# Hand-written mutants: the breaks PIT cannot make (Lua script lines, timing constants, retention,
# the grace period, when a renewal counts from). Each NAME.patch (a diff from the repository root)
# is applied to a scratch copy of this checkout, its main classes are compiled again, and the killing
# test named for it in mutants.tsv runs TIMES times (default 1): the mutant is KILLED when every run
# fails (runs failed: TIMES of TIMES). Build the tests first (./mvnw -o -q -pl reactive-lock test-compile): the copy takes them as built.
#
#   reactive-lock/src/mutants/run.sh                 # every mutant once
#   reactive-lock/src/mutants/run.sh renew-from-reply 10
#   reactive-lock/src/mutants/run.sh --baseline renew-from-reply 3   # the killing test on the unmutated copy
#
# The table printed (and written to target/mutants/results.tsv): mutant, killing test, runs failed,
# seconds of the test's first run. The scratch copies are under ${MUTANTS_TMP:-/tmp/reactive-lock-mutants}.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
scratch=${MUTANTS_TMP:-/tmp/reactive-lock-mutants}
baseline=false
if [[ ${1:-} == --baseline ]]; then baseline=true; shift; fi
only=${1:-}
times=${2:-1}
out="$root/reactive-lock/target/mutants"
mkdir -p "$out"
results="$out/results.tsv"
printf 'mutant\tkilling test\truns failed\tseconds (first run)\n' > "$results"

while IFS=$'\t' read -r name test what; do
  [[ -z $name || $name == \#* || $name == mutant ]] && continue
  [[ -n $only && $name != "$only" ]] && continue
  copy="$scratch/$name"
  rm -rf "$copy"
  mkdir -p "$copy"
  # The sources and this module's build output (tests compiled once, here; the mutant recompiles the main classes only).
  (cd "$root" && tar --exclude=./.git --exclude='./reactive-lock/*/target' --exclude='./examples-webflux/target' \
      --exclude='./reactive-lock/target/mutants' --exclude='./reactive-lock/target/pit-reports' -cf - .) | (cd "$copy" && tar -xf -)
  if [[ $baseline == false ]]; then
    (cd "$copy" && patch -s -p1 < "$here/$name.patch")
  fi
  (cd "$copy" && ./mvnw -o -q -pl reactive-lock compile > "$out/$name.compile.log" 2>&1) || {
    echo "$name: does not compile, see $out/$name.compile.log" >&2; exit 1; }
  # TIMES runs in one test JVM: surefire runs a failing test again, up to TIMES - 1 more times, and
  # stops at the first pass (then it reports the test as flaky: the mutant survived that run).
  rm -rf "$copy/reactive-lock/target/surefire-reports"
  start=$(date +%s)
  (cd "$copy" && ./mvnw -o -q -pl reactive-lock surefire:test -Djdk25.skip=true -Dtest="$test" \
        -Dsurefire.failIfNoSpecifiedTests=false -Dsurefire.rerunFailingTestsCount=$((times - 1)) > "$out/$name.log" 2>&1) || true
  reports=$(cat "$copy"/reactive-lock/target/surefire-reports/TEST-*.xml 2>/dev/null || true)
  # Runs failed: the most of any one test method (its first run and the reruns that failed).
  failed=$(python3 "$here/runs-failed.py" <<< "$reports")
  [[ $baseline == true ]] && failed="$failed (baseline)"
  seconds=$(grep -o 'testcase name="[^"]*" classname="[^"]*" time="[^"]*"' <<< "$reports" | head -1 | sed 's/.*time="\([^"]*\)"/\1/')
  echo "$name: $test failed $failed of $times runs (its first run ${seconds} s; $(( $(date +%s) - start )) s with Maven)" >&2
  printf '%s\t%s\t%s/%s\t%s\n' "$name" "$test" "$failed" "$times" "$seconds" >> "$results"
done < "$here/mutants.tsv"
column -t -s $'\t' "$results"
