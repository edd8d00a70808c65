# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
# Thin wrapper over Meson. Build directories:
#   build/       optimised build (make, make demo, make bench)
#   build-asan/  ASan + UBSan build that make check tests
#   build-tsan/  ThreadSanitizer build of the concurrency tests (part of make check)
#   build-fuzz/  clang + libFuzzer targets (make fuzz)
MESON ?= meson
BUILD ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
TSAN_BUILD ?= build-tsan
SANITIZE_ARGS = -Db_sanitize=address,undefined -Db_lundef=false \
	-Dc_args=-fno-sanitize-recover=all -Dc_link_args=-fno-sanitize-recover=all

.PHONY: all deps demo check bench bench-families fuzz clean

all: deps
	@test -f $(BUILD)/build.ninja || $(MESON) setup $(BUILD) --buildtype=release -Db_ndebug=if-release -Dwerror=true >/dev/null
	ninja -C $(BUILD)

deps:
	@scripts/install-deps.sh

demo: all
	@scripts/demo.sh $(BUILD)

check: all
	@test -f $(ASAN_BUILD)/build.ninja || $(MESON) setup $(ASAN_BUILD) --buildtype=debug \
		-Dwerror=true $(SANITIZE_ARGS) >/dev/null
	@test -f $(TSAN_BUILD)/build.ninja || $(MESON) setup $(TSAN_BUILD) --buildtype=debug \
		-Dwerror=true -Db_sanitize=thread -Db_lundef=false >/dev/null
	ninja -C $(ASAN_BUILD)
	ninja -C $(TSAN_BUILD) tests/test-ring tests/test-appevent tests/test-print-pool tests/test-cache \
		tests/test-dat-write tests/test-dat-read tests/test-feed tests/test-output src/cli/tracekit \
		bench/bench-report
	@# Each test's "N/M name OK" line shows as it ends (progress); the full log stays in the file.
	@{ $(MESON) test -C $(ASAN_BUILD) --print-errorlogs --num-processes 2 2>&1; \
		echo $$? >$(ASAN_BUILD)/test-status; } | tee $(ASAN_BUILD)/test-output.txt | \
		grep --line-buffered -E '^ *[0-9]+/[0-9]+ '; \
		status=$$(cat $(ASAN_BUILD)/test-status); \
		{ $(MESON) test -C $(TSAN_BUILD) --no-rebuild --suite tsan --print-errorlogs 2>&1; \
		echo $$? >$(TSAN_BUILD)/test-status; } | tee $(TSAN_BUILD)/test-output.txt | \
		grep --line-buffered -E '^ *[0-9]+/[0-9]+ '; \
		[ "$$(cat $(TSAN_BUILD)/test-status)" -eq 0 ] || status=1; \
		[ $$status -eq 0 ] || sed -n '/^--- /,$$p' $(ASAN_BUILD)/test-output.txt $(TSAN_BUILD)/test-output.txt | head -200; \
		python3 tests/summary.py $(ASAN_BUILD)/meson-logs/testlog.json $(TSAN_BUILD)/meson-logs/testlog.json

# A benchmark that lacks what it measures against (root, tracefs, perf) prints
# "SKIP: why" and exits 77; the others still run. Any other failure stops make.
bench: all
	@$(BUILD)/bench/bench-dat
	@$(BUILD)/bench/bench-ring
	@$(BUILD)/bench/bench-report --tracekit $(BUILD)/src/cli/tracekit
	@$(BUILD)/bench/bench-record --tracekit $(BUILD)/src/cli/tracekit || [ $$? -eq 77 ]
	@$(BUILD)/bench/bench-cache || [ $$? -eq 77 ]
	@$(BUILD)/bench/bench-dwarf --tracekit $(BUILD)/src/cli/tracekit || [ $$? -eq 77 ]
	@$(BUILD)/bench/bench-analyze --tracekit $(BUILD)/src/cli/tracekit || [ $$? -eq 77 ]
	@$(BUILD)/bench/bench-parquet --tracekit $(BUILD)/src/cli/tracekit
	@$(BUILD)/bench/bench-pftrace --tracekit $(BUILD)/src/cli/tracekit
	@$(BUILD)/bench/bench-profile --tracekit $(BUILD)/src/cli/tracekit || [ $$? -eq 77 ]

# One real recording per event family against trace-cmd report and perf script
# (root; records under /tmp/tracefs.lock; ~20 minutes): see bench/bench-families.c.
bench-families: all
	@$(BUILD)/bench/bench-families --tracekit $(BUILD)/src/cli/tracekit || [ $$? -eq 77 ]

fuzz: deps
	@test -f $(FUZZ_BUILD)/build.ninja || CC=clang $(MESON) setup $(FUZZ_BUILD) \
		--buildtype=debugoptimized -Dfuzzers=true -Db_lundef=false \
		-Dc_args='-fsanitize=address,undefined,fuzzer-no-link' \
		-Dc_link_args='-fsanitize=address,undefined' >/dev/null
	ninja -C $(FUZZ_BUILD)
	@echo "fuzzers built in $(FUZZ_BUILD)/fuzz/: run e.g. $(FUZZ_BUILD)/fuzz/fuzz-dat fuzz/corpus/dat -max_total_time=60"

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) $(FUZZ_BUILD)
