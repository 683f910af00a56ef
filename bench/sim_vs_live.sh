#!/usr/bin/env bash
# Sim engine versus live engine on the same validate scenarios, measured side by side:
# the wall time each engine reports for the run (RunResult timing.wall_seconds), best of
# three. Needs root on Linux x86-64 (the live engine). Usage: bench/sim_vs_live.sh VMLAB [SCENARIO...]
set -euo pipefail
vmlab=$1; shift
scenarios=("$@")
[ ${#scenarios[@]} -gt 0 ] || mapfile -t scenarios < <("$vmlab" scenarios | awk '/^validate\//{print $1}')
wall() { "$vmlab" run "$1" --engine "$2" --json | grep -o '"wall_seconds": [0-9.e+-]*' | awk '{print $2}'; }
best() { local b=""; for _ in 1 2 3; do t=$(wall "$1" "$2"); if [ -z "$b" ] || awk "BEGIN{exit !($t < $b)}"; then b=$t; fi; done; echo "$b"; }
printf '%-28s %12s %12s %10s\n' scenario sim_s live_s live/sim
min=""
for s in "${scenarios[@]}"; do
  ts=$(best "$s" sim); tl=$(best "$s" live)
  r=$(awk "BEGIN{printf \"%.0f\", $tl / $ts}")
  printf '%-28s %12.6f %12.3f %10s\n' "$s" "$ts" "$tl" "$r"
  if [ -z "$min" ] || [ "$r" -lt "$min" ]; then min=$r; fi
done
echo "smallest live/sim ratio: ${min}x (target: >= 50x)"
