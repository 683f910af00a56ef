#!/usr/bin/env bash
# Every command's JSON output against its schema in docs/vmlab-json.schema.json (issue 13,
# item 2): run (sim and live), compare, seeds, validate (live), estimate, inspect, whatif,
# sweep, tiobench. Validated with Debian's python3-jsonschema (scripts/install-deps.sh installs it).
#   usage: json_schema_test.sh VMLAB_BINARY SCHEMA
set -euo pipefail
VMLAB=${1:?usage: json_schema_test.sh VMLAB SCHEMA}
SCHEMA=${2:?usage: json_schema_test.sh VMLAB SCHEMA}
PY=/usr/bin/python3
$PY -c "import jsonschema" 2>/dev/null || { echo "SKIP: python3-jsonschema is not installed (scripts/install-deps.sh installs it)"; exit 77; }
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
check() {  # check DEF COMMAND...
  local def=$1; shift
  local out="$DIR/$def-$RANDOM.json"
  "$VMLAB" "$@" >"$out" || { rc=$?; [ $rc -eq 1 ] || { echo "FAIL: vmlab $* exited $rc"; exit 1; }; }
  $PY - "$SCHEMA" "$def" "$out" "$*" <<'PY'
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
sub = dict(schema["$defs"][sys.argv[2]])
sub["$defs"] = schema["$defs"]
doc = json.load(open(sys.argv[3]))
try:
    jsonschema.validate(doc, sub, cls=jsonschema.Draft202012Validator)
except jsonschema.ValidationError as e:
    sys.exit(f"FAIL: vmlab {sys.argv[4]}: {e.message} at {list(e.absolute_path)}")
print(f"ok: vmlab {sys.argv[4]}")
PY
}
check run run validate/anon-64m --json
check run run validate/anon-64m --format json --profile linux-2.6.15-x86_64
check compare compare validate/anon-64m --variant "a:" --variant "b: kernel.profile=linux-2.6.15" --json
check seeds seeds 001 --json
check estimate estimate --processes 4 --shared 1GiB --json
check sweep sweep validate/anon-64m --set kernel.profile=linux-6.18,linux-2.6.15 --format json -q
check compare whatif validate/anon-64m --json
check tiobench tiobench --size 8 --threads 2 --random 200 --json
check tiobench tiobench --size 8 --threads 2 --random 200 --mmap --format json
if [ "$(id -u)" -eq 0 ]; then
  check run run validate/anon-64m --engine live --json
  check validate validate validate/anon-64m --json
  check inspect inspect $$ --json
  check compare whatif $$ --json
else
  echo "SKIP (not root): the live run, validate, inspect and whatif of a process"
fi
