#!/usr/bin/env bash
# Re-runs every command quoted in README.md between
#   <!-- output: COMMAND -->  and  <!-- end output -->
# and pastes its real output in between (as a ``` block). Run after a change
# that moves the numbers: tools/refresh-readme.sh [README.md]
set -euo pipefail
cd "$(dirname "$0")/.."
file=${1:-README.md}  # any Markdown file with output markers (README.md, docs/case-study.md)
python3 - "$file" <<'PY'
import re, subprocess, sys
path = sys.argv[1]
text = open(path).read()
pat = re.compile(r'(<!-- output: (.*?) -->\n)(.*?)(<!-- end output -->)', re.S)
def run(m):
    cmd = m.group(2)
    out = subprocess.run(cmd, shell=True, capture_output=True, text=True)
    body = (out.stdout + out.stderr).rstrip('\n')
    return m.group(1) + "```\n$ " + cmd.replace("build/mfusim", "mfusim") + "\n" + body + "\n```\n" + m.group(4)
open(path, "w").write(pat.sub(run, text))
PY
