#!/bin/sh
# One client of the 1% case in instructions: bench/sga-1pct-warm.toml cut to a 32 GiB
# segment, run under callgrind with 6 clients and with 1; the difference over 5 is what
# one client costs (83,886 draws over 16,384 PTE tables). Instruction counts do not move
# with the host's load, as times on this VM do by a third (docs/decisions.md, issue 11,
# "what a fault run costs, counted in instructions"). About ten seconds.
#
# usage: bench/count-instructions.sh [path/to/vmlab]
set -eu
vmlab=${1:-build/vmlab}
here=$(dirname "$0")
command -v valgrind >/dev/null || { echo "count-instructions: valgrind is not installed" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
count() {
  valgrind --tool=callgrind --callgrind-out-file="$out/cg.$1" "$vmlab" run "$here/sga-1pct-warm.toml" \
    --set object.sga.size=32GiB --set "group.client.count=$1" --quiet >/dev/null 2>"$out/err.$1"
  sed -n 's/.*I *refs: *//p' "$out/err.$1" | tr -d ,
}
six=$(count 6)
one=$(count 1)
echo "6 clients: $six instructions; 1 client: $one; one client: $(( (six - one) / 5 ))"
