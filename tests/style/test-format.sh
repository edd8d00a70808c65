#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
# The tree's C files are formatted as .clang-format says (clang-format 14,
# Debian's clang-format package). A difference fails make check; fix it with
#   clang-format -i FILE
set -uo pipefail
cd "${TK_SOURCE_DIR:?}"
if ! command -v clang-format >/dev/null; then
	echo "SKIP: clang-format is not installed (scripts/install-deps.sh installs it)"
	exit 77
fi
mapfile -t files < <(git ls-files 'src/*.[ch]' 'include/*.h' 'tests/*.[ch]' 'bench/*.[ch]' \
	'fuzz/*.[ch]' 'examples/*.[ch]' 2>/dev/null || find src include tests bench fuzz -name '*.[ch]')
[ ${#files[@]} -gt 0 ] || { echo "FAIL: no C files found under $TK_SOURCE_DIR"; exit 1; }
out=$(clang-format --dry-run "${files[@]}" 2>&1 | grep 'warning:')
if [ -n "$out" ]; then
	echo "$out" | head -20
	echo "FAIL: $(echo "$out" | wc -l) places differ from .clang-format; run clang-format -i on the files above"
	exit 1
fi
echo "PASS: ${#files[@]} files formatted as .clang-format says"
