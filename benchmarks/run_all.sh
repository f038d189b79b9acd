#!/usr/bin/env bash
# Run every benchmark in sequence (never two at once: on 2 cores they would disturb each other) and
# write everything they print to benchmarks/results-<date>.txt. Takes ~15-25 minutes.
#   benchmarks/run_all.sh                  # all
#   benchmarks/run_all.sh --quick          # skips repeat_spread, the full `kbench report` and the TUI
#   benchmarks/run_all.sh --out FILE       # write somewhere else
set -u
cd "$(dirname "$0")/.."
out="benchmarks/results-$(date +%Y%m%d-%H%M%S).txt"
quick=0
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --out) shift; out="$1" ;;
    *) echo "usage: $0 [--quick] [--out FILE]" >&2; exit 2 ;;
  esac
  shift
done
export COLUMNS="${COLUMNS:-160}"
# each script first waits (up to 5 min) until other processes leave the CPUs alone
export KBENCH_BENCH_WAIT_QUIET="${KBENCH_BENCH_WAIT_QUIET:-300}"
scripts=(process_spread.py aa_drift.py overhead.py isolation_cost.py wall_times.py)
[ $quick -eq 0 ] && scripts+=(repeat_spread.py tui_latency.py)
status=0
for s in "${scripts[@]}"; do
  args=()
  [ $quick -eq 1 ] && [ "$s" = wall_times.py ] && args=(--skip-full)
  echo "### $s ${args[*]:-}" | tee -a "$out"
  python "benchmarks/$s" "${args[@]}" 2>&1 | tee -a "$out"
  rc=${PIPESTATUS[0]}
  [ "$rc" -ne 0 ] && { echo "### $s exited with $rc" | tee -a "$out"; status=1; }
  echo | tee -a "$out"
done
echo "results written to $out"
exit $status
