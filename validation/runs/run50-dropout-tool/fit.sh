#!/usr/bin/env bash
# Run 50's pairs fitted as a user would (repo root, after the call): the shipped probe file without run 48's
# pairs, plus this run's, through `mfusim calibrate`; prints the dropout lines of the fit report.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
sed '/^# Run 48 (validation\/runs\/run48-attn-dropout)/,$d' hardware/calibration/h200-probe.toml > "$tmp/probe.toml"
cat "$here/results/drop.toml" >> "$tmp/probe.toml"
build/mfusim calibrate "$tmp/probe.toml" --out "$tmp/cal.toml" | grep dropout
