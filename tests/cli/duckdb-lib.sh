# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#
# DuckDB for the shell tests that query tracekit's Parquet tables, sourced
# after lib.sh. duckdb_setup BUILD installs @duckdb/node-api from the npm
# registry once per build directory (BUILD/duckdb-node) and writes
# $tmp/duck.mjs, which runs the SQL file named by its argument and prints
# each row as "a|b|c"; it returns 1, after a loud SKIP line saying why,
# when node or npm is missing or the install fails.

duckdb_setup() {
	local duck=$1/duckdb-node
	local index=$duck/node_modules/@duckdb/node-api/lib/index.js

	if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
		echo "SKIP: ======== DuckDB checks: node and npm are not installed ========"
		return 1
	fi
	if [ ! -f "$index" ]; then
		mkdir -p "$duck"
		if ! (cd "$duck" && timeout 300 npm install --no-audit --no-fund --prefix . \
			@duckdb/node-api >"$tmp/npm.log" 2>&1) || [ ! -f "$index" ]; then
			echo "SKIP: ======== DuckDB checks: npm could not install @duckdb/node-api" \
				"(registry unreachable?): $(tail -3 "$tmp/npm.log" | tr '\n' ' ') ========"
			return 1
		fi
	fi
	cat >"$tmp/duck.mjs" <<EOF
import { DuckDBInstance } from '$index';
import { readFileSync } from 'node:fs';
const con = await (await DuckDBInstance.create(':memory:')).connect();
const r = await con.runAndReadAll(readFileSync(process.argv[2], 'utf8'));
for (const row of r.getRows()) console.log(row.map(String).join('|'));
EOF
}
