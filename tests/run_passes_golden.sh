#!/usr/bin/env bash
# run_passes_golden.sh SINTER ROOT [update]
#   For every tests/passes/NAME.sir, `sinter print NAME.sir --passes LIST
#   [--precision P]` must write exactly tests/passes/NAME.expected. LIST
#   comes from a "# passes: LIST" line at the top of the file (canonicalize
#   when there is none), P from a "# precision: P" line. With `update`, the
#   .expected files are (re)written instead: review the diff before keeping.
# Every mismatch is reported; the exit status is 1 if there was any.
set -u
sinter=$1 root=$2 mode=${3:-check}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0 n=0
shopt -s nullglob

for sir in "$root"/tests/passes/*.sir; do
	name=$(basename "$sir" .sir)
	exp=${sir%.sir}.expected
	n=$((n + 1))
	passes=$(sed -n 's/^# passes: *\([^ ]*\).*/\1/p' "$sir" | head -1)
	precision=$(sed -n 's/^# precision: *\([^ ]*\).*/\1/p' "$sir" | head -1)
	args=(print "$sir" --passes "${passes:-canonicalize}")
	[ -n "$precision" ] && args+=(--precision "$precision")
	if ! "$sinter" "${args[@]}" >"$tmp/out" 2>"$tmp/err"; then
		echo "FAIL $name: sinter ${args[*]} failed:"
		cat "$tmp/err"
		fail=1
	elif [ "$mode" = update ]; then
		cp "$tmp/out" "$exp"
		echo "wrote $exp"
	elif [ ! -f "$exp" ]; then
		echo "FAIL $name: no $exp"
		fail=1
	elif ! cmp -s "$tmp/out" "$exp"; then
		echo "FAIL $name: output of sinter ${args[*]} differs from $exp:"
		diff -u "$exp" "$tmp/out" | head -40
		fail=1
	else
		echo "ok   $name (${passes:-canonicalize}${precision:+, $precision})"
	fi
done
if [ "$n" -eq 0 ]; then
	echo "FAIL: no tests/passes/*.sir under $root"
	exit 1
fi
echo "$n files, $([ $fail = 0 ] && echo 'all passed' || echo 'some FAILED')"
exit $fail
