#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) in build-fuzz, seeds a corpus per
# target and runs each target for SECONDS seconds (default 30). See docs/testing.md.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]      TARGET: scenario trace size procfs ops
#
# Corpora grow in build-fuzz/corpus/<target>; crashes land in build-fuzz/crashes/<target>.
# Exit status 1 when any target found a crash.
#
# Environment: FUZZ_BUILD_DIR (default build-fuzz); FUZZ_EXTRA_FLAGS, extra compile flags
# such as -fno-sanitize=array-bounds to fuzz past a known finding (use another build dir);
# FUZZ_REUSE_BUILD=1 to use FUZZ_BUILD_DIR as it is configured (scripts/test.sh's
# sanitizer build, which has VMLAB_FUZZ on) instead of configuring it here.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-30}
shift || true
targets=("$@")
((${#targets[@]})) || targets=(scenario trace size procfs ops)
jobs=$(nproc)
B=${FUZZ_BUILD_DIR:-build-fuzz}

if [[ -n ${FUZZ_REUSE_BUILD:-} ]]; then
  grep -q '^VMLAB_FUZZ:BOOL=ON' "$B/CMakeCache.txt" 2>/dev/null ||
    { echo "fuzz.sh: FUZZ_REUSE_BUILD: $B is not a build with VMLAB_FUZZ=ON" >&2; exit 2; }
else
  CC=clang-14 CXX=clang++-14 cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DVMLAB_FUZZ=ON -DVMLAB_BENCH=OFF -DVMLAB_FUZZ_EXTRA_FLAGS="${FUZZ_EXTRA_FLAGS:-}" >/dev/null
fi
ninja -C "$B" -j"$jobs" vmlab $(printf 'fuzz_%s ' "${targets[@]}")

# Seeds: every scenario, the trace `vmlab trace` writes for each, hand-written traces,
# sizes and /proc texts, and whatever regressions are kept in fuzz/regressions.
seed() {
  local t=$1 dir="$B/corpus/$1"
  mkdir -p "$dir" "$B/crashes/$t"
  case $t in
    scenario)
      find scenarios -name '*.toml' -print0 | while IFS= read -r -d '' f; do cp "$f" "$dir/$(echo "$f" | tr / _)"; done ;;
    trace)
      find scenarios -name '*.toml' -print0 | while IFS= read -r -d '' f; do
        ASAN_OPTIONS=detect_leaks=0 "$B/vmlab" trace "$f" >"$dir/$(basename "$f" .toml).trace" 2>/dev/null ||
          rm -f "$dir/$(basename "$f" .toml).trace"
      done
      # Traces of big scenarios are long; keep the ones that fit -max_len whole.
      find "$dir" -name '*.trace' -size +16k -delete
      sed -n '/^```$/,/^```$/p' docs/trace-format.md | sed '1d;$d' | sed -n '/^# vmlab trace/,/^phase load/p' >"$dir/doc-example.trace"
      printf 'spawn 1\nmmap 1 a len=8MiB align=2MiB phase=1MiB\ntouch 1 a write\nfork 1 2\ntouch 2 a off=4KiB len=1MiB write uniform count=10 seed=3\nmunmap 1 a off=2MiB len=2MiB\nmprotect 2 a prot=r\nmadvise 2 a dontneed\nexit 1\nphase end # done\n' >"$dir/hand-1.trace"
      printf 'machine profile=linux-2.6.15 memory=1GiB\noverride pti=false pgtable_free=pgd_gap\nobject f file size=10000\nspawn 3\nmmap 3 x obj=f prot=r shared locked addr=0x40000000\ntouch 3 x zipf theta=1.2 count=50\n' >"$dir/hand-2.trace" ;;
    size)
      for s in 4096 4KiB 4K 4KB 2.66GiB '680*4MiB' 0x40000000 '1 GiB' 1B 18446744073709551615 '3*2*1KiB' 0.5KiB 1TiB; do
        printf '%s' "$s" >"$dir/$(echo "$s" | md5sum | cut -c1-12)"
      done ;;
    procfs)
      [ -r /proc/meminfo ] && cp /proc/meminfo "$dir/meminfo"
      [ -r /proc/self/status ] && cp /proc/self/status "$dir/status"
      [ -r /proc/self/stat ] && cp /proc/self/stat "$dir/stat"
      printf 'MemTotal:       16384000 kB\nMemFree:  1000 kB\nPageTables:  4096 kB\n' >"$dir/meminfo-old"
      printf 'Name:\tx\nVmPTE:\t      48 kB\nRssAnon:\t    1024 kB\nRssFile:\t  20 kB\nRssShmem:\t 0 kB\n' >"$dir/status-min"
      printf '42 (a) b) c) R 1 42 42 0 -1 4194560 777 0 0 0 1 2 0 0 20 0 1 0 100 1000 10\n' >"$dir/stat-parens"
      [ -r /proc/slabinfo ] && grep -E '^(slabinfo|# name|vm_area_struct|anon_vma(_chain)?|mm_struct) ' /proc/slabinfo >"$dir/slabinfo" || true
      [ -r /proc/self/maps ] && head -c 4000 /proc/self/maps >"$dir/maps"
      printf 'slabinfo - version: 2.0\nanon_vma 1234 1582 12 290 1 : tunables 120 60 8 : slabdata 6 6 0\n' >"$dir/slabinfo-20"
      printf '1165 N0=1165\n' >"$dir/sys-slab-objects" ;;
    ops)
      head -c 64 /dev/zero >"$dir/zero"
      for i in 1 2 3 4 5 6 7 8; do head -c 256 /dev/urandom >"$dir/random-$i"; done ;;
  esac
  if [ -d "fuzz/regressions/$t" ]; then cp fuzz/regressions/"$t"/* "$dir"/ 2>/dev/null || true; fi
}

max_len() {
  case $1 in
    scenario) echo 8192 ;; trace) echo 16384 ;; size) echo 64 ;; procfs) echo 4096 ;; ops) echo 512 ;;
  esac
}

status=0
for t in "${targets[@]}"; do
  seed "$t"
  dict=()
  [[ $t == scenario || $t == trace ]] && dict=(-dict=fuzz/vmlab.dict)
  echo "== fuzz_$t for ${secs}s"
  if ! ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      "$B/fuzz_$t" "$B/corpus/$t" "${dict[@]}" -max_len="$(max_len "$t")" -max_total_time="$secs" \
      -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$B/crashes/$t/" \
      2>"$B/fuzz_$t.log"; then
    echo "fuzz_$t FOUND A CRASH: see $B/fuzz_$t.log and $B/crashes/$t/"
    status=1
  fi
  grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' "$B/fuzz_$t.log" | sed 's/^/  /' || true
done
exit $status
