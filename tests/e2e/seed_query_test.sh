#!/usr/bin/env bash
# The users' seed query (tests/e2e/fixtures/seed_query.sql, a copy of shared/fixtures/) runs
# unmodified through `rankscope-analyze query` on a node bundle (and on a merged db when
# rankscope-merge is built), and gives exactly what the sqlite3 CLI gives on the same data.
set -euo pipefail
build=$1
src=$2
query_file=$src/tests/e2e/fixtures/seed_query.sql
shared_copy=$src/../shared/fixtures/seed_query.sql
if [[ -f $shared_copy ]] && ! cmp -s "$query_file" "$shared_copy"; then
  echo "FAIL: tests/e2e/fixtures/seed_query.sql differs from shared/fixtures/seed_query.sql"; exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Loss on node1 with collectives slower than the query's 50 ms threshold.
"$build/tests/support/make-synth-cluster" "$work" --fault loss --fault-node 1 --transfer-ms 15 \
  --steps 12 >/dev/null
sql=$(cat "$query_file")
check() {  # check INPUT SQLITE_DB
  "$build/analyzer/rankscope-analyze" query "$1" "$sql" --format csv > "$work/ours.csv"
  sqlite3 -header -csv "$2" < "$query_file" | tr -d '\r' > "$work/cli.csv"
  if ! diff -u "$work/cli.csv" "$work/ours.csv"; then echo "FAIL: output differs from sqlite3 on $1"; exit 1; fi
  rows=$(($(wc -l < "$work/ours.csv") - 1))
  [[ $rows -gt 0 ]] || { echo "FAIL: no slow AllReduce rows in $1"; exit 1; }
  echo "$1: $rows rows, retransmit windows: $(awk -F, 'NR>1 && $3>0' "$work/ours.csv" | wc -l)"
}
zstd -qdc "$work/node0.rsb" > "$work/node0.db"
check "$work/node0.rsb" "$work/node0.db"
# node0 is a peer of the lossy node1: some slow calls must see retransmits in their window.
[[ $(awk -F, 'NR>1 && $3>0' "$work/ours.csv" | wc -l) -gt 0 ]] || { echo "FAIL: no retransmits joined"; exit 1; }
if [[ -x $build/merger/rankscope-merge ]]; then
  "$build/merger/rankscope-merge" -o "$work/merged.rsdb" "$work"/node*.rsb >/dev/null
  check "$work/merged.rsdb" "$work/merged.rsdb"
else
  echo "note: rankscope-merge not built; merged-db case not run"
fi
echo "PASS"
