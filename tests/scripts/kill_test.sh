#!/usr/bin/env bash
# SIGKILL a live run at 20 points spread across it, and after each check that once the
# next live run (even points) or `vmlab cleanup` (odd points) has run, nothing the killed
# run created or changed remains on the host: no worker process, no memfd or unnamed file
# held open, no file under /var/tmp, no SysV shared-memory segment, no journal, and every
# host setting a live run may change (huge-page pools, THP policies) at its value from
# before the test.
#
#   tests/scripts/kill_test.sh VMLAB [SCENARIO...]
#
# Each scenario is run once whole to time it (T); kill point i of 20 falls uniformly at
# random in [i/20 T, (i+1)/20 T). KILL_TEST_SEED fixes the points (printed). Exit 0 when
# every point left nothing behind, 1 otherwise, 77 (skip) without root on Linux x86-64.
set -u
vmlab=$1
shift
scenarios=("$@")
((${#scenarios[@]})) || scenarios=("$(dirname "$0")/../data/live-kill.toml")
if [ "$(id -u)" -ne 0 ] || [ "$(uname -s)" != Linux ] || [ "$(uname -m)" != x86_64 ]; then
  echo "SKIP: the live engine needs root on Linux x86-64 (uid $(id -u), $(uname -sm))"
  exit 77
fi
seed=${KILL_TEST_SEED:-$(( $(date +%s) % 100000 ))}
RANDOM=$seed
echo "kill_test: seed $seed (KILL_TEST_SEED=$seed reproduces these points)"

settings=(/proc/sys/vm/nr_hugepages /proc/sys/vm/nr_overcommit_hugepages
          /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
          /sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages
          /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/mm/transparent_hugepage/shmem_enabled
          /sys/kernel/mm/transparent_hugepage/defrag)
settings_now() { for f in "${settings[@]}"; do [ -r "$f" ] && echo "$f = $(cat "$f")"; done; }
sysv_now() { [ -r /proc/sysvipc/shm ] && tail -n +2 /proc/sysvipc/shm | wc -l || echo 0; }
# vmlab tiobench's directories are another command's, never a live run's: a tiobench
# someone runs meanwhile is not this run's leftover.
var_tmp_now() { ls -d /var/tmp/vmlab-* 2>/dev/null | grep -v '^/var/tmp/vmlab-tiobench'; }

baseline_settings=$(settings_now)
baseline_sysv=$(sysv_now)
baseline_var_tmp=$(var_tmp_now)

# What a killed run could have left, one line per thing; nothing at all when clean.
leftovers() {
  local c n
  for c in /proc/[0-9]*/comm; do
    n=$(cat "$c" 2>/dev/null) || continue
    case $n in
      vmlab-worker|vmlab-zygote)
        # A zombie holds no memory, file or object: it waits for its reaper, init after
        # the driver died (and some containers' init reaps seldom or never). A process
        # gone by the time its status is read was one being reaped. Anything else is a leak.
        local st
        st=$(grep -E '^(State|PPid)' "${c%/comm}/status" 2>/dev/null | tr -s '\t\n' '  ') || continue
        case $st in *"State: Z"*|"") ;; *) echo "process ${c%/comm} ($n: $st)" ;; esac ;;
    esac
  done
  find /proc/[0-9]*/fd -maxdepth 1 \( -lname 'memfd:vmlab-*' -o -lname '/var/tmp/#*' -o -lname '/var/tmp/vmlab-*' \) \
    ! -lname '/var/tmp/vmlab-tiobench*' -printf 'open object %p -> %l\n' 2>/dev/null
  [ "$(var_tmp_now)" = "$baseline_var_tmp" ] || echo "files under /var/tmp: $(var_tmp_now | tr '\n' ' ')"
  [ "$(sysv_now)" = "$baseline_sysv" ] || echo "SysV shm segments: $(sysv_now), were $baseline_sysv"
  ls /run/vmlab/*.journal 2>/dev/null | sed 's/^/journal /'
  local s
  s=$(settings_now)
  [ "$s" = "$baseline_settings" ] || diff <(echo "$baseline_settings") <(echo "$s") | grep '^[<>]' | sed 's/^/setting /'
}

clean=0
total=0
skipped=0
for scen in "${scenarios[@]}"; do
  t0=$(date +%s%N)
  if ! err=$("$vmlab" run "$scen" --engine live 2>&1 >/dev/null); then
    # A host without the huge-page size the scenario asks for cannot run it: skip that
    # scenario, saying why (the kernel decides which sizes exist: hugepages-*kB).
    if [[ $err == *"this host has no hugetlb pages of"* ]]; then
      echo "kill_test: SKIP $scen: ${err#vmlab: error: }"
      skipped=$((skipped + 1))
      continue
    fi
    printf '%s\n' "$err"
    echo "kill_test: a whole run of $scen failed"
    exit 1
  fi
  whole_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  echo "kill_test: $scen takes ${whole_ms} ms whole"
  for i in $(seq 0 19); do
    at_ms=$(( (whole_ms * i + whole_ms * (RANDOM % 1000) / 1000) / 20 ))
    "$vmlab" run "$scen" --engine live >/dev/null 2>&1 &
    pid=$!
    sleep "$(printf '%d.%03d' $((at_ms / 1000)) $((at_ms % 1000)))"
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    rc=$?
    if (( i % 2 )); then
      how="vmlab cleanup"
      "$vmlab" cleanup >/dev/null || echo "kill_test: vmlab cleanup failed"
    else
      how="the next live run"
      "$vmlab" run validate/anon-64m --engine live >/dev/null || echo "kill_test: the next live run failed"
    fi
    # Looked at under the live runs' lock (/run/vmlab/lock, flock; opened without
    # truncating it: a killed holder's name in it is what tells the next run to recover):
    # on a busy host another live run may start at any moment, and its workers, objects
    # and settings are its own, not this run's leftovers; holding the lock, none is running.
    exec {lock}>>"${VMLAB_RUN_DIR:-/run/vmlab}/lock"
    flock "$lock"
    left=$(leftovers)
    exec {lock}>&-
    total=$((total + 1))
    what=$([ "$rc" -eq 137 ] && echo "killed" || echo "had ended (exit $rc)")
    if [ -z "$left" ]; then
      clean=$((clean + 1))
      echo "kill_test: point $((i + 1))/20 at ${at_ms} ms ($what): nothing left after $how"
    else
      echo "kill_test: point $((i + 1))/20 at ${at_ms} ms ($what): LEFT BEHIND after $how:"
      echo "$left" | sed 's/^/    /'
    fi
  done
done
echo "kill_test: $clean of $total kill points left nothing behind"
if [ "$skipped" -eq "${#scenarios[@]}" ]; then
  echo "SKIP: this host can run none of the scenarios"
  exit 77
fi
[ "$clean" -eq "$total" ]
