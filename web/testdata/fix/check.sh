#!/bin/sh
# The "tests" of the fix page's browser test: Test<X> fails for every
# <X>.txt that does not hold "ok", in go test's format.
fail=0
for f in *.txt; do
  t=${f%.txt}; v=$(cat "$f")
  if [ "$v" != ok ]; then
    printf -- '--- FAIL: Test%s (0.00s)\n    calc_test.go:7: %s() = %s, want ok\n' "$t" "$t" "$v"
    fail=1
  fi
done
if [ $fail = 0 ]; then echo ok; else echo FAIL; fi
exit $fail
