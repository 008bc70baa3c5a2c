#!/usr/bin/env bash
# run_malformed.sh SINTER TESTS_DIR
# For every TESTS_DIR/malformed/NAME.sir, run `sinter check malformed/NAME.sir`
# from TESTS_DIR (so messages carry that relative path): the exit status must
# be 1 and stderr exactly malformed/NAME.err. Every mismatch is reported.
set -u
sinter=$1
cd "$2" || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0 n=0
for sir in malformed/*.sir; do
	[ -e "$sir" ] || continue
	name=$(basename "$sir" .sir)
	exp=${sir%.sir}.err
	n=$((n + 1))
	if [ ! -f "$exp" ]; then
		echo "FAIL $name: no $exp"
		fail=1
		continue
	fi
	"$sinter" check "$sir" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ "$rc" -ne 1 ]; then
		echo "FAIL $name: exit status $rc, expected 1; stderr:"
		head -20 "$tmp/err"
		fail=1
	elif ! cmp -s "$tmp/err" "$exp"; then
		echo "FAIL $name: stderr differs from $exp:"
		diff -u "$exp" "$tmp/err" | head -20
		fail=1
	elif [ -s "$tmp/out" ]; then
		echo "FAIL $name: unexpected output on stdout:"
		head -5 "$tmp/out"
		fail=1
	else
		echo "ok   $name: $(head -1 "$exp" | sed 's/^[^ ]* error: //')"
	fi
done
if [ "$n" -lt 24 ]; then
	echo "FAIL: only $n malformed inputs (at least 24 expected)"
	fail=1
fi
echo "$n malformed inputs, $([ $fail = 0 ] && echo 'all passed' || echo 'some FAILED')"
exit $fail
