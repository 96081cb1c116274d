#!/usr/bin/env bash
# Writes every user-visible output of every shipped scenario into one folder,
# so that a refactoring can be checked byte for byte:
#   tools/snapshot-outputs.sh build/mfusim /tmp/before
#   ... change the code, rebuild ...
#   tools/snapshot-outputs.sh build/mfusim /tmp/after
#   diff -r /tmp/before /tmp/after && echo byte-identical
# Covers run (text, --json, --trace, --svg, tp_comm_overlap), check, sweep --json,
# plan --json, diagnose --json, list, and the bad-input messages.
set -uo pipefail
BIN=${1:?usage: snapshot-outputs.sh MFUSIM_BINARY OUTDIR}
OUT=${2:?usage: snapshot-outputs.sh MFUSIM_BINARY OUTDIR}
BIN=$(readlink -f "$BIN")
cd "$(dirname "$0")/.."
mkdir -p "$OUT"
run() { # name, command...
  local name=$1; shift
  "$@" >"$OUT/$name.out" 2>"$OUT/$name.err"
  echo "exit $?" >>"$OUT/$name.err"
}
for s in scenarios/*.toml; do
  b=$(basename "$s" .toml)
  run "$b.run" "$BIN" run "$s"
  run "$b.json" "$BIN" run "$s" --json
  run "$b.trace" "$BIN" run "$s" --trace "$OUT/$b.trace.json" --svg "$OUT/$b.svg"
  run "$b.tpov" "$BIN" run "$s" --set features.tp_comm_overlap=true --json
  run "$b.check" "$BIN" check "$s"
  run "$b.diagnose" "$BIN" diagnose "$s" --json
done
run sweep70b "$BIN" sweep scenarios/128xh100_70b.toml --vary parallel.pp=2,4,8 --vary schedule.name=1f1b,zb-h1,interleaved-1f1b --json
run sweep70b-text "$BIN" sweep scenarios/128xh100_70b.toml --vary parallel.pp=2,4,8 --vary features.recompute=none,selective,full
run sweep8b-csv "$BIN" sweep scenarios/8xh100_llama3_8b.toml --vary training.micro_batch=1,2,4 --csv "$OUT/sweep8b.csv"
run plan70b "$BIN" plan scenarios/128xh100_70b.toml --top 10 --json
run plan8b "$BIN" plan scenarios/8xh100_llama3_8b.toml --top 5
run plan175b "$BIN" plan scenarios/1024xa100_gpt3_175b.toml --top 5 --json
for what in models hardware schedules; do run "list-$what" "$BIN" list "$what"; done
for f in tests/bad_input/*.toml; do
  run "bad-$(basename "$f" .toml)" "$BIN" run "$f"
done
# wall-clock figures in plan's text are the only non-deterministic output
sed -i -E 's/in [0-9.]+ s/in X s/; s/\([0-9.]+ s\)/(X s)/' "$OUT"/plan*.out
exit 0
