#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
# The shared library exports exactly the functions the public headers
# declare with TK_API, and the version script lists each of them by name:
# a function added to a header without the map (or the reverse) fails here.
set -uo pipefail
cd "${TK_SOURCE_DIR:?}"
lib=${TK_BUILD_DIR:?}/libtracekit.so
[ -f "$lib" ] || { echo "FAIL: $lib was not built"; exit 1; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
grep -h 'TK_API' include/tracekit/*.h | grep -v '#define' |
	grep -o 'tk_[a-z0-9_]*(' | tr -d '(' | sort -u >"$tmp/declared"
sed -n 's/^[[:space:]]*\(tk_[a-z0-9_]*\);.*/\1/p' src/lib/libtracekit.map | sort -u >"$tmp/mapped"
nm -D --defined-only "$lib" | awk '$2 == "T" { print $3 }' | sed 's/@.*//' | sort -u >"$tmp/exported"
fail=0
if ! diff -u "$tmp/declared" "$tmp/mapped" >"$tmp/d1"; then
	echo "FAIL: headers (TK_API) and src/lib/libtracekit.map differ (- headers, + map):"
	grep '^[-+]tk' "$tmp/d1" | head -20
	fail=1
fi
if ! diff -u "$tmp/mapped" "$tmp/exported" >"$tmp/d2"; then
	echo "FAIL: the map and what libtracekit.so exports differ (- map, + exported):"
	grep '^[-+]tk' "$tmp/d2" | head -20
	fail=1
fi
[ $fail -eq 0 ] && echo "PASS: $(wc -l <"$tmp/declared") functions declared, listed and exported"
exit $fail
