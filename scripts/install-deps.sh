#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
# Install the Debian packages tracekit builds, tests and benchmarks with.
# Does nothing when all are present, so make targets can call it every time.
set -euo pipefail

packages=(
	build-essential meson ninja-build pkg-config python3
	libzstd-dev zlib1g-dev liblzma-dev libelf-dev libdw-dev libtraceevent-dev libcmocka-dev systemtap-sdt-dev
	clang llvm clang-format
	trace-cmd linux-perf zstd
	liblttng-ust-dev lttng-tools babeltrace2
	libc6-dbg groff-base strace
	linux-libc-dev
	libsqlite3-dev sqlite3
	protobuf-compiler
	chromium
)

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing packages: ${missing[*]}" >&2
	echo "install-deps: run as root, or: sudo apt-get install ${missing[*]}" >&2
	exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
