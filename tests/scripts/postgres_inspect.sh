#!/usr/bin/env bash
# vmlab inspect and whatif on a real PostgreSQL server (issue 12): a cluster of its own in a
# temporary directory (Debian's postgresql 15), 1 GiB of shared_buffers, 40 pgbench clients
# (select-only, so the backends read the buffer pool); while they run, `vmlab inspect`
# reads every backend and `vmlab whatif` replays them with huge pages. Checked: inspect's
# attribution reconciles with each backend's VmPTE within 1%, and the shared segment is
# one segment with every backend in it. The server is stopped and everything removed on
# any exit (a trap); nothing of the host's own PostgreSQL is touched.
#   usage: postgres_inspect.sh VMLAB_BINARY [SECONDS]
set -euo pipefail
VMLAB=${1:?usage: postgres_inspect.sh VMLAB_BINARY [SECONDS]}
SECONDS_RUN=${2:-20}
skip() { echo "SKIP: $*"; exit 0; }
[ "$(id -u)" -eq 0 ] || skip "needs root (initdb runs as the postgres user, inspect reads its processes)"
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -n "$PGBIN" ] && [ -x "$PGBIN/pgbench" ] || skip "PostgreSQL is not installed (scripts/install-deps.sh installs it)"
id postgres >/dev/null 2>&1 || skip "no postgres user (Debian's postgresql package creates it)"
command -v python3 >/dev/null || skip "no python3 to read the JSON"

DIR=$(mktemp -d /tmp/vmlab-pg.XXXXXX)
chown postgres: "$DIR"
PORT=$((20000 + RANDOM % 20000))
as_pg() { runuser -u postgres -- "$@"; }
cleanup() {
  set +e
  [ -n "${BENCH:-}" ] && kill "$BENCH" 2>/dev/null && wait "$BENCH" 2>/dev/null
  [ -f "$DIR/data/postmaster.pid" ] && as_pg "$PGBIN/pg_ctl" -D "$DIR/data" -m immediate -w stop >/dev/null 2>&1
  # Anything of this cluster still alive (it runs with -D $DIR/data) goes too.
  pkill -KILL -f -- "-D $DIR/data" 2>/dev/null
  rm -rf "$DIR"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

as_pg "$PGBIN/initdb" -D "$DIR/data" -A trust --no-sync >/dev/null
as_pg "$PGBIN/pg_ctl" -D "$DIR/data" -l "$DIR/log" -w \
  -o "-c shared_buffers=1GB -c huge_pages=off -c max_connections=100 -c port=$PORT -c listen_addresses='' -c unix_socket_directories=$DIR -c fsync=off" \
  start >/dev/null
as_pg "$PGBIN/createdb" -h "$DIR" -p "$PORT" bench
# Scale 60: about 900 MB of tables, so the select-only clients fill most of the 1 GiB pool.
as_pg "$PGBIN/pgbench" -h "$DIR" -p "$PORT" -i -q -s 60 bench >/dev/null 2>&1
as_pg "$PGBIN/pgbench" -h "$DIR" -p "$PORT" -S -c 40 -j 2 -T $((SECONDS_RUN * 5)) bench >"$DIR/bench.log" 2>&1 &
BENCH=$!
sleep "$SECONDS_RUN"
POSTMASTER=$(head -1 "$DIR/data/postmaster.pid")
# The backends of the pgbench clients and the long-lived helpers (autovacuum workers come
# and go while we read; a PID named to inspect must exist).
PIDS=$(pgrep -P "$POSTMASTER" -f "bench \[local\]|checkpointer|background writer|walwriter" | tr '\n' ' ')
[ -n "$PIDS" ] || { echo "FAIL: no backends under postmaster $POSTMASTER"; exit 1; }
echo "== postmaster $POSTMASTER and $(echo $PIDS | wc -w) children (pgbench: 40 clients, shared_buffers 1 GiB)"

# One reading for the check and the table: vmlab inspect --json, then the same as text.
time "$VMLAB" inspect "$POSTMASTER" $PIDS --json >"$DIR/inspect.json" || { tail "$DIR/bench.log"; exit 1; }
python3 - "$DIR/inspect.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
procs = j["processes"]
bad = [p for p in procs if p["vmpte_bytes"] and abs(p["residual_bytes"]) > 0.01 * p["vmpte_bytes"]]
worst = max(procs, key=lambda p: abs(p["residual_bytes"]) / max(p["vmpte_bytes"], 1))
for s in j["skipped"]:
    print(f"not read: {s['pid']}: {s['reason']}")
print(f"{len(procs)} processes; largest residual {worst['residual_bytes']} of {worst['vmpte_bytes']} bytes "
      f"(pid {worst['pid']}); VmPTE total {sum(p['vmpte_bytes'] for p in procs)} bytes")
segs = [s for s in j["segments"] if s["path"].startswith("/dev/zero") or s["path"].startswith("/SYSV")]
if not segs:
    sys.exit("FAIL: the shared buffer pool is not among the shared segments")
big = max(segs, key=lambda s: s["size_bytes"])
print(f"shared segment {big['path']}: {big['size_bytes']} bytes, {len(big['pids'])} processes, "
      f"page tables {big['table_bytes']:.0f} bytes")
if len(big["pids"]) < len(procs) - 1:
    sys.exit(f"FAIL: the segment has {len(big['pids'])} of {len(procs)} processes")
if bad:
    sys.exit("FAIL: reconciliation off by more than 1%: " + ", ".join(f"{p['pid']}: {p['residual_bytes']} of {p['vmpte_bytes']}" for p in bad))
print("ok: every process's mappings account for its VmPTE within 1%")
PY
live_pids() { for p in $PIDS; do if [ -d /proc/$p ]; then echo -n "$p "; fi; done; }
PIDS=$(live_pids)
"$VMLAB" inspect "$POSTMASTER" $PIDS >"$DIR/inspect.txt"
head -60 "$DIR/inspect.txt"
echo "== vmlab whatif (the backends as read, replayed with huge pages)"
PIDS=$(live_pids)
time "$VMLAB" whatif "$POSTMASTER" $PIDS --save "$DIR/inspected.toml"
# VMLAB_PG_SAVE=FILE keeps the scenario of the server as read (for replaying it later).
[ -n "${VMLAB_PG_SAVE:-}" ] && cp "$DIR/inspected.toml" "$VMLAB_PG_SAVE"
echo "== pgbench (stopped now; its clients ran while vmlab read the backends)"
kill -INT "$BENCH" 2>/dev/null || true
wait "$BENCH" || true
BENCH=
tail -4 "$DIR/bench.log"
