# tierkit — build and test entry points. `make test` is what CI runs (.ci/run).

CARGO ?= cargo

.PHONY: test build bench deps fmt

# Everything the tests need that a fresh machine may lack. Rust, cargo and gcc come with
# the machine; later issues add QEMU, a test kernel and Python packages here.
deps:
	@command -v $(CARGO) >/dev/null || { echo "cargo not found: install Rust (rustup)"; exit 1; }

# All crates' unit, integration and doc tests; benches must still compile.
test: deps
	$(CARGO) test --workspace --locked
	$(CARGO) check --workspace --benches --locked

build: deps
	$(CARGO) build --release --locked -p tierkit

# Criterion benchmarks; figures go to docs/BENCHMARKS.md.
bench: deps
	$(CARGO) bench -p tierkit-core --bench sketch_update

fmt:
	$(CARGO) fmt --all
