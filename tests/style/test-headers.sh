#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
# Every public header compiles alone, as C11 and as C++11, with warnings as
# errors: a program includes any one of them without the others first.
set -uo pipefail
cd "${TK_SOURCE_DIR:?}"
cc=${CC:-cc}
cxx=${CXX:-c++}
command -v "$cxx" >/dev/null || { echo "SKIP: no C++ compiler ($cxx)"; exit 77; }
fail=0 n=0
for h in include/tracekit/*.h; do
	name=tracekit/$(basename "$h")
	for lang in c c++; do
		if [ $lang = c ]; then comp=$cc std=c11; else comp=$cxx std=c++11; fi
		if ! err=$(printf '#include <%s>\nint tk_header_test_anchor;\n' "$name" |
			$comp -std=$std -x $lang -fsyntax-only -Wall -Wextra -Werror -pedantic \
				-Iinclude - 2>&1); then
			echo "FAIL: $name as $lang:"
			echo "$err" | head -10
			fail=1
		fi
		n=$((n + 1))
	done
done
[ $fail -eq 0 ] && echo "PASS: $n header compilations (each header alone, C11 and C++11)"
exit $fail
