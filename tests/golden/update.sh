#!/usr/bin/env bash
# Regenerates the golden terminal reports: tests/golden/<scenario>.txt is the
# exact output of `mfusim run scenarios/<scenario>.toml`, for every scenario.
# Run it deliberately, after a change that is meant to move the numbers, and
# review `git diff tests/golden/` before committing. See README.md here.
#   tests/golden/update.sh            # builds build/mfusim if needed
#   BUILD=build-release tests/golden/update.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${BUILD:-build}"
case "$build" in /*) ;; *) build="$root/$build" ;; esac
cd "$root"
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -DMFUSIM_PROBE=OFF -DMFUSIM_BENCH=OFF >/dev/null
fi
cmake --build "$build" --target mfusim -j "$(nproc)" >/dev/null
rm -f tests/golden/*.txt
for s in scenarios/*.toml; do
  name="$(basename "$s" .toml)"
  "$build/mfusim" run "$s" > "tests/golden/$name.txt"
  echo "tests/golden/$name.txt"
done
