#!/usr/bin/env bash
# Hostile inputs, one per line of a table (cases.tsv): each line crafts an input from a valid
# one, runs a command on it under `timeout` and checks its exit status and standard error.
#   run_cases.sh BUILD_DIR CASES_TSV [NAME_SUBSTRING]
#
# cases.tsv: tab-separated, '#' lines and blank lines ignored; the columns are
#   name     the case's name
#   base     the valid input it starts from, written by rankscope_export_testdata (3 nodes):
#              bundle     node0.rsb
#              merged     merged.rsdb
#              oldbundle  node0.rsb with its tables declared as an earlier recorder declared
#                         them (not STRICT: a column's type is not enforced)
#              oldmerged  merged.rsdb likewise
#   craft    SQL the sqlite3 CLI applies to the base's SQLite image ('-': none); ' ;; ' splits
#            it into statements for separate sqlite3 runs (a schema written with
#            writable_schema takes effect in the next); a bundle is recompressed afterwards
#   command  bash, run in a scratch directory with the crafted input in $IN, the other valid
#            files in $DATA and the tools on PATH
#   exit     the exit status expected
#   stderr   a text standard error must contain ('-': anything)
# Every command runs under `timeout 60`: a tool that hangs fails its case (status 124).
set -uo pipefail
build=$(cd "$1" && pwd)
cases=$2
only=${3:-}
for tool in sqlite3 zstd timeout; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool not installed"; exit 77; }
done
export PATH="$build/analyzer:$build/merger:$build/exporter:$PATH"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export DATA=$work/data
mkdir -p "$DATA"
"$build/exporter/rankscope_export_testdata" "$DATA" >/dev/null || { echo "FAIL: no test input"; exit 1; }
zstd -qdc "$DATA/node0.rsb" > "$work/bundle.db"
cp "$DATA/merged.rsdb" "$work/merged.db"
unstrict="PRAGMA writable_schema=ON; UPDATE sqlite_schema SET sql = replace(sql, ') STRICT', ')')
  WHERE type = 'table'; PRAGMA writable_schema=OFF;"
for kind in bundle merged; do
  cp "$work/$kind.db" "$work/old$kind.db"
  sqlite3 "$work/old$kind.db" "$unstrict" || { echo "FAIL: cannot make old$kind"; exit 1; }
  [[ $(sqlite3 "$work/old$kind.db" "SELECT count(*) FROM pragma_table_list WHERE strict") == 0 ]] ||
    { echo "FAIL: old$kind still has STRICT tables"; exit 1; }
done

failures=0
ran=0
while IFS=$'\t' read -r name base craft command want_exit want_err; do
  [[ -z $name || $name == \#* ]] && continue
  [[ -n $only && $name != *"$only"* ]] && continue
  ran=$((ran + 1))
  dir=$work/case-$ran
  mkdir -p "$dir"
  db=$dir/input.db
  cp "$work/$base.db" "$db" || { echo "FAIL $name: unknown base '$base'"; failures=$((failures + 1)); continue; }
  if [[ $craft != - ]]; then
    ok=1
    while IFS= read -r part; do
      [[ -z ${part// /} ]] && continue
      sqlite3 "$db" "$part" > "$dir/craft.log" 2>&1 || { ok=0; break; }
    done < <(printf '%s\n' "${craft// ;; /$'\n'}")
    if [[ $ok == 0 ]]; then
      echo "FAIL $name: crafting failed: $(cat "$dir/craft.log")"; failures=$((failures + 1)); continue
    fi
  fi
  case $base in
    *bundle) IN=$dir/node0.rsb; zstd -q --check "$db" -o "$IN" ;;
    *) IN=$dir/merged.rsdb; mv "$db" "$IN" ;;
  esac
  export IN
  (cd "$dir" && timeout 60 bash -c "$command") > "$dir/stdout" 2> "$dir/stderr"
  got=$?
  err=$(cat "$dir/stderr")
  if [[ $got == 124 ]]; then
    echo "FAIL $name: did not finish within 60 s"; failures=$((failures + 1))
  elif [[ $got != "$want_exit" ]]; then
    echo "FAIL $name: exit status $got, expected $want_exit; stderr: ${err:0:600}"
    failures=$((failures + 1))
  elif [[ $want_err != - && $err != *"$want_err"* ]]; then
    echo "FAIL $name: stderr lacks '$want_err': ${err:0:600}"; failures=$((failures + 1))
  else
    echo "ok   $name"
  fi
done < "$cases"
[[ $ran -gt 0 ]] || { echo "FAIL: no case ran"; exit 1; }
if [[ $failures -gt 0 ]]; then echo "$failures of $ran case(s) failed"; exit 1; fi
echo "PASS: $ran cases"
