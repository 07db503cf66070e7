#!/bin/bash
# Every manual page is clean under mandoc's linter: no warning or error (style notes about
# lines longer than 80 bytes aside), and every page has a SEE ALSO section.
# Without mandoc: skipped (exit 77), but a failure where CI is set (.ci/install-deps has it).
set -u
src=$1
if ! command -v mandoc >/dev/null; then
  if [[ -n "${CI:-}" ]]; then echo "FAIL: mandoc is not installed (apt-get install mandoc)"; exit 1; fi
  echo "SKIP: mandoc is not installed"; exit 77
fi
fails=0
for page in "$src"/man/*.[1-8]; do
  out=$(mandoc -Tlint "$page" 2>&1 | grep -v "STYLE: input text line longer than 80 bytes")
  if [[ -n "$out" ]]; then echo "$out"; fails=$((fails + 1)); fi
  grep -q '^\.SH SEE ALSO' "$page" || { echo "FAIL: $page has no SEE ALSO"; fails=$((fails + 1)); }
done
((fails)) && { echo "$fails problem(s)"; exit 1; }
echo "PASS: $(ls "$src"/man/*.[1-8] | wc -l) pages"
