# tierkit — build and test entry points. `make test` is what CI runs (.ci/run).

CARGO ?= cargo
PYTHON ?= python3
PYENV := target/pyenv
# libCacheSim's Python bindings: the reference the cache-mode check compares against.
LIBCACHESIM := libcachesim==0.3.5
# Building and testing the Python package (python/, crates/py).
PYPACKAGE_DEPS := maturin==1.16.0 pytest==9.2.0 pandas==3.1.1 matplotlib==3.11.2 ray==2.60.0

.PHONY: test build bench corpus deps fmt fonts fuzz fuzz-smoke libcachesim-check py-test record-check report-check results vm-test vm-bench

# Everything the tests need that a fresh machine may lack. Rust, cargo, gcc and CPython
# come with the machine; Python packages go into a venv under target/.
deps: $(PYENV)/.ready fonts
	@command -v $(CARGO) >/dev/null || { echo "cargo not found: install Rust (rustup)"; exit 1; }

# DejaVu Sans, the text of `tierkit report --png`'s bitmaps (its tests draw PNGs).
DEJAVU := /usr/share/fonts/truetype/dejavu
fonts:
	test -f $(DEJAVU)/DejaVuSans.ttf -a -f $(DEJAVU)/DejaVuSans-Bold.ttf || DEBIAN_FRONTEND=noninteractive apt-get install -y fonts-dejavu-core || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y fonts-dejavu-core; }

$(PYENV)/.ready:
	$(PYTHON) -m venv $(PYENV)
	$(PYENV)/bin/pip install --quiet --disable-pip-version-check $(LIBCACHESIM) $(PYPACKAGE_DEPS)
	touch $@

# All crates' unit, integration and doc tests; benches must still compile; cache mode
# must reproduce libCacheSim's miss counts; every fuzz target runs a few seconds from its
# committed corpus.
test: deps
	$(CARGO) test --workspace --locked
	$(CARGO) check --workspace --benches --locked
	$(MAKE) py-test
	$(MAKE) libcachesim-check
	$(MAKE) record-check
	$(MAKE) report-check
	$(MAKE) fuzz-smoke
	$(MAKE) vm-test

build:
	$(CARGO) build --release --locked -p tierkit

# Fuzzing the input parsers with libFuzzer through cargo-fuzz (docs/FUZZING.md), on the
# stable toolchain: `-s none` builds without a sanitizer, which needs no nightly flag;
# debug assertions and overflow checks stay on (cargo-fuzz's default without -O).
# cargo-fuzz is installed from crates.io into target/tools. Each target starts from its
# committed corpus fuzz/corpus/NAME and writes what it finds to target/fuzz/NAME.
CARGO_FUZZ_VERSION := 0.13.2
CARGO_FUZZ := target/tools/bin/cargo-fuzz
FUZZ_TARGETS := $(sort $(basename $(notdir $(wildcard fuzz/fuzz_targets/*.rs))))
# Bounds: 1 GiB resident, 10 s an input. One allocation over 256 MiB is a failure too: the
# fuzz crate's allocator aborts (-malloc_limit_mb takes effect only under a sanitizer).
FUZZ_LIMITS := -rss_limit_mb=1024 -malloc_limit_mb=256 -timeout=10
FUZZ_RUN = cd fuzz && PATH="$(CURDIR)/target/tools/bin:$$PATH" cargo fuzz run -s none
# `make fuzz FUZZ_TARGET=trace_csv FUZZ_SECONDS=600`: one target for as long as asked.
FUZZ_TARGET ?= $(firstword $(FUZZ_TARGETS))
FUZZ_SECONDS ?= 600
# Seconds per target in `make test`; there an input may run 60 s before it fails, as a
# damo file of a few hundred bytes may stand for millions of accesses (docs/FUZZING.md).
FUZZ_SMOKE_SECONDS ?= 5

$(CARGO_FUZZ):
	$(CARGO) install --locked --root target/tools cargo-fuzz --version $(CARGO_FUZZ_VERSION)

fuzz-smoke: $(CARGO_FUZZ)
	cd fuzz && $(CARGO) fetch --locked
	cd fuzz && PATH="$(CURDIR)/target/tools/bin:$$PATH" cargo fuzz build -s none
	set -e; for t in $(FUZZ_TARGETS); do \
		mkdir -p target/fuzz/$$t; \
		( $(FUZZ_RUN) $$t ../target/fuzz/$$t corpus/$$t -- $(FUZZ_LIMITS) -timeout=60 -max_total_time=$(FUZZ_SMOKE_SECONDS) -print_final_stats=1 ) 2>target/fuzz/$$t.log \
			|| { tail -40 target/fuzz/$$t.log; exit 1; }; \
		echo "fuzz $$t: $$(grep -o 'stat::number_of_executed_units: [0-9]*' target/fuzz/$$t.log | grep -o '[0-9]*$$') runs, no failure"; \
	done

fuzz: $(CARGO_FUZZ)
	mkdir -p target/fuzz/$(FUZZ_TARGET)
	$(FUZZ_RUN) $(FUZZ_TARGET) ../target/fuzz/$(FUZZ_TARGET) corpus/$(FUZZ_TARGET) -- $(FUZZ_LIMITS) -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1

# Tests on a real kernel: Debian's Linux 6.12 under QEMU (TCG) with node 1 a CPU-less, lower-tier
# memory node, as CXL memory appears (tests/vm/README.md). Root on Debian 12: setup.sh installs
# QEMU and fetches the kernel into target/vm/cache. VM_SCENARIOS="workload raw-move" picks some.
VM_SCENARIOS ?=
vm-test: build
	bash tests/vm/setup.sh && bash tests/vm/build-initramfs.sh && bash tests/vm/run.sh $(VM_SCENARIOS)

# The live benchmarks in the same guest (tests/vm/bench: move throughput against a raw move_pages
# loop, the mover alone, tierkit's own CPU cost, scattered hot pages): VMBENCH lines, nothing
# asserted; not part of `make test`. VM_SCENARIOS picks some here too.
vm-bench: build
	bash tests/vm/setup.sh && bash tests/vm/build-initramfs.sh && bash tests/vm/run.sh --bench $(VM_SCENARIOS)

# The Python package: build its wheel with maturin, install it into the venv and run the
# pytest suite, which checks it against the tierkit binary.
py-test: build $(PYENV)/.ready
	rm -rf target/py-wheel
	$(PYENV)/bin/maturin build --release --interpreter $(PYENV)/bin/python --out target/py-wheel
	$(PYENV)/bin/pip install --quiet --disable-pip-version-check --force-reinstall --no-deps target/py-wheel/*.whl
	TIERKIT_BIN=target/release/tierkit $(PYENV)/bin/python -m pytest -q tests/python

libcachesim-check: build $(PYENV)/.ready
	$(PYENV)/bin/python tests/libcachesim/check_cache_mode.py target/release/tierkit target/libcachesim

# `tierkit record --via valgrind` on Debian's sqlite3 through tierkit's own Valgrind tool,
# then trace info and compare --trace (valgrind, sqlite3 and gcc installed when missing).
record-check: build
	command -v valgrind >/dev/null && command -v sqlite3 >/dev/null && command -v gcc >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y valgrind sqlite3 gcc || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y valgrind sqlite3 gcc; }
	bash tests/record/sqlite_demo.sh target/release/tierkit target/record-check

# `tierkit report` loaded in headless Chromium (Debian's, installed when missing): every
# figure in the DOM, no console errors; and a PNG per figure with --png (drawn by tierkit,
# with fonts-dejavu-core).
report-check: build fonts
	command -v chromium >/dev/null || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; }
	bash tests/report/check_chromium.sh target/release/tierkit target/report-check

# Criterion benchmarks and the simulator's speed; figures go to docs/BENCHMARKS.md.
bench: build
	$(CARGO) bench -p tierkit-core --bench sketch_update
	target/release/tierkit bench

# docs/RESULTS.md and docs/figures/ from the papers' grid at the CI-sized --quick scale
# (drop --quick in RESULTS_FLAGS for the full scale, run by hand).
RESULTS_FLAGS ?= --suite paper --quick
results: build $(PYENV)/.plots
	target/release/tierkit compare --suite real --corpus corpus --json > target/real-results.json
	target/release/tierkit compare --suite real --corpus corpus --no-prefault --json > target/real-results-first-access.json
	target/release/tierkit compare $(RESULTS_FLAGS) --json > target/results.json
	rm -rf target/shift-timeline
	target/release/tierkit compare --workload hotset-shift --ratios 1:16 \
		--policies oracle,freqtier,hybridtier,memtis,tpp,autonuma --timeline target/shift-timeline > /dev/null
	$(PYENV)/bin/python tools/results.py target/results.json target/shift-timeline docs \
		make results RESULTS_FLAGS="$(RESULTS_FLAGS)"
	$(PYENV)/bin/python tools/real_results.py --first-access target/real-results-first-access.json \
		target/real-results.json corpus docs make results

# The corpus of real programs (corpus/README.md): each program under tierkit's Valgrind tool
# from its start marker, 5M records, gaps rounded for storage, with its sidecar. Takes hours
# of CPU; CORPUS="redis sqlite" re-records some.
CORPUS ?= --all
corpus: build
	bash corpus/record.sh $(CORPUS)

$(PYENV)/.plots: $(PYENV)/.ready
	$(PYENV)/bin/pip install --quiet --disable-pip-version-check matplotlib
	touch $@

fmt:
	$(CARGO) fmt --all
