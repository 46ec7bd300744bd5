#!/usr/bin/env bash
# The first coupling of docs/FIRST-COUPLING.md, as a test: the page's launch lines in a fresh directory,
# as two jobs and in one launch; the reader must find every value right and no out_*.nc reach the disk;
# then mode="file" (the files on disk, the same values), and filename="out_" (the original DTF's habit).
# usage: check.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 here=$2/examples/first
run=$(mktemp -d "${TMPDIR:-/tmp}/dtf-first.XXXXXX")
trap 'rm -rf "$run"' EXIT
cp "$here/dtf.ini" "$run/"
cd "$run"
for launch in "" --mpmd; do
  echo "\$ dtfrun -c dtf.ini $launch -n 3 ./writer : -n 2 ./reader"
  out=$(DTF_PRINT_STATS=1 timeout 120 "$build/bin/dtfrun" -c dtf.ini --timeout 30 $launch -n 3 \
        "$build/examples/first_writer" : -n 2 "$build/examples/first_reader" 2>&1) \
    || { echo "$out"; echo "FAIL: dtfrun $launch failed"; exit 1; }
  echo "$out"
  grep -q "reader: read 3 files, every value right" <<<"$out" || { echo "FAIL: the reader's verdict"; exit 1; }
  grep -q "writer: wrote 3 files" <<<"$out" || { echo "FAIL: the writer's verdict"; exit 1; }
  ! ls out_*.nc 2>/dev/null || { echo "FAIL: a transfer-mode file reached the disk"; exit 1; }
  # DTF_PRINT_STATS=1: a short table per component, what happened, no row of a feature not in use.
  for row in "writer\] statistics over 3 ranks" "writer\]   sessions closed     9 write, 0 read" \
             "writer\]   data sent" "reader\] statistics over 2 ranks" "reader\]   sessions closed     0 write, 6 read" \
             "reader\]   data received" "reader\]   time in dtf calls"; do
    grep -q "\[dtf $row" <<<"$out" || { echo "FAIL: the statistics must show '$row'"; exit 1; }
  done
  [ "$(grep -c '^\(\[[a-z+]*\] \)\?\[dtf [a-z]*\]  ' <<<"$out")" -le 16 ] \
    && ! grep -q "stats over\|files written\|to the file system\|never used" <<<"$out" \
    || { echo "FAIL: the statistics must be short, without features not in use"; exit 1; }
done
# mode="file" (the config's comment): the same programs through the real files, the same verdict.
sed 's/^mode=.*/mode="file"/' "$here/dtf.ini" > dtf.ini
out=$(timeout 120 "$build/bin/dtfrun" -c dtf.ini --timeout 30 -n 3 "$build/examples/first_writer" : \
      -n 2 "$build/examples/first_reader" 2>&1) || { echo "$out"; echo "FAIL: mode=file failed"; exit 1; }
echo "$out"
grep -q "reader: read 3 files, every value right" <<<"$out" || { echo "FAIL: the reader's verdict (file)"; exit 1; }
[ "$(ls out_*.nc | wc -l)" = 3 ] || { echo "FAIL: mode=file must leave the 3 files on disk"; exit 1; }
rm -f out_*.nc
# The original DTF's habit: filename= a part of the file name, without '%'. The same run, and one notice.
sed 's/^filename=.*/filename="out_"/' "$here/dtf.ini" > dtf.ini
out=$(timeout 120 "$build/bin/dtfrun" -c dtf.ini --timeout 30 -n 3 "$build/examples/first_writer" : \
      -n 2 "$build/examples/first_reader" 2>&1) || { echo "$out"; echo "FAIL: filename=\"out_\" failed"; exit 1; }
echo "$out"
grep -q "reader: read 3 files, every value right" <<<"$out" || { echo "FAIL: the reader's verdict (out_)"; exit 1; }
[ "$(grep -c "is handled by filename=\"out_\" (.*dtf.ini:[0-9]*): a pattern with neither" <<<"$out")" = 2 ] \
  || { echo "FAIL: each component's rank 0 must say once how filename=\"out_\" matches"; exit 1; }
! ls out_*.nc 2>/dev/null || { echo "FAIL: a transfer-mode file reached the disk (out_)"; exit 1; }
echo PASS
