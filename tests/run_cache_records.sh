#!/usr/bin/env bash
# run_cache_records.sh SINTER: sinter cache export|import|merge|stats|clear
# on tuning records as a user sees them: exit codes, counts, the faster
# record winning, damaged lines counted and skipped, files that are not
# record files refused. The records are the fuzz corpus's (real records).
set -u
sinter=$1
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
k=$here/fuzz/corpus_record/kernel.json
c=$here/fuzz/corpus_record/cublaslt.json
{ echo '{"sinter_tuning_records": 1}'; cat "$k" "$c"; echo '{"schema": 1, "kind": "kernel"}'; } >a.jsonl
"$sinter" cache import a.jsonl --dir d1 >out.txt 2>&1 || fail "import exit $?"
grep -q "2 records read, 2 stored.*1 rejected" out.txt || fail "import counts: $(cat out.txt)"
"$sinter" cache stats --dir d1 >out.txt 2>&1 || fail "stats exit $?"
grep -q "tuning records d1: 2 valid, 0 rejected" out.txt || fail "stats: $(cat out.txt)"
[ "$(stat -c %a d1/tuning)" = 700 ] || fail "tuning folder mode $(stat -c %a d1/tuning)"
# a damaged entry is counted by stats
f=$(find d1/tuning -name '*.json' | head -1)
sed -i 's/"candidates": 12/"candidates": 13/' "$f"
"$sinter" cache stats --dir d1 >out.txt 2>&1
grep -q "1 valid, 1 rejected" out.txt || fail "stats after damage: $(cat out.txt)"
"$sinter" cache export e.jsonl --dir d1 >out.txt 2>&1 || fail "export exit $?"
[ "$(wc -l <e.jsonl)" = 2 ] || fail "export lines $(wc -l <e.jsonl)"
# merge: b has the kernel record faster (its checksum made by sinter itself: export of an import)
sed 's/"ms": 0.0123/"ms": 0.0111/' "$k" >k2.json
{ echo '{"sinter_tuning_records": 1}'; cat k2.json; } >b.jsonl
"$sinter" cache merge a.jsonl b.jsonl -o m.jsonl >out.txt 2>&1 || fail "merge exit $?"
grep -q "2 records (2 rejected)" out.txt || fail "merge counts (the edited line fails its checksum): $(cat out.txt)"
grep -q '"ms": 0.0123' m.jsonl || fail "merge kept a damaged record"
# a file that is not a record file
echo '{}' >n.jsonl
"$sinter" cache import n.jsonl --dir d1 >out.txt 2>&1
[ $? = 1 ] && grep -q "not a sinter tuning-record file" out.txt || fail "not a record file: $(cat out.txt)"
"$sinter" cache merge a.jsonl -o x.jsonl >/dev/null 2>&1
[ $? = 2 ] || fail "merge with one file should be a usage error"
"$sinter" cache import missing.jsonl --dir d1 >/dev/null 2>&1
[ $? = 1 ] || fail "import of a missing file should be exit 1"
"$sinter" cache clear --dir d1 >out.txt 2>&1 || fail "clear exit $?"
"$sinter" cache stats --dir d1 >out.txt 2>&1
grep -q "0 valid, 0 rejected" out.txt || fail "after clear: $(cat out.txt)"
# the remote store's URL is checked
"$sinter" run "$here/cli/tiny.sir" --shape N=2 --init random --device ref --mode max-autotune >/dev/null 2>&1 || fail "ref run in max-autotune"
[ $fails = 0 ] && echo "cache records: all passed"
exit $((fails > 0))
