# cgroup v2 memory-protection reclaim benchmark suite.
#
# `make help` lists the targets. V=1 shows the commands the scripts run.

SHELL := /bin/bash
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:

KERNELS ?=
K ?=
V ?= 0
ACCEL ?= auto
export V ACCEL

KERNEL_SH := bench/kernel.sh

# The C programs that run while measuring, and their unit tests.
CC := gcc
BENCH_CFLAGS := -std=gnu11 -O2 -g -Wall -Wextra -Werror -D_GNU_SOURCE
BIN := build/bin
COMMON_SRCS := workloads/common.c workloads/cgutil.c
COMMON_HDRS := workloads/common.h workloads/cgutil.h
LOAD_SRCS := workloads/main.c workloads/region.c workloads/ws.c \
	workloads/pressure.c workloads/ramp.c workloads/reclaim.c $(COMMON_SRCS)
LOAD_HDRS := workloads/workloads.h workloads/region.h $(COMMON_HDRS)
C_TESTS := $(BIN)/test_common $(BIN)/test_cgutil

.PHONY: help
help: ## list the targets (this text)
	@echo "usage: make TARGET [VAR=value ...]"
	@echo
	@grep -hE '^[a-z][a-z-]*:.*## ' $(MAKEFILE_LIST) | \
		awk -F':.*## ' '{ printf "  %-14s %s\n", $$1, $$2 }'
	@echo
	@echo "variables: KERNELS=\"a b\", SCENARIOS=\"s t\", PROFILE=quick|full," \
		"REPEAT=n, RUN=id, HOSTS=file (make bench, peers, regress); K=name (make kernel, make run);" \
		"ACCEL=auto|kvm|tcg; V=1 (show commands)"

.PHONY: deps
deps: ## install the Debian packages the suite needs (as root)
	@bench/deps.sh

BENCH_KERNELS ?= $(if $(KERNELS),$(KERNELS),control patched)
# The variants behind the kernels named (K@mglru is an arm of K).
variants_of = $(sort $(foreach k,$(1),$(firstword $(subst @, ,$(k)))))
SCENARIOS ?= low-steps
PROFILE ?= full
REPEAT ?=
RUN ?= $(shell date +%Y%m%d-%H%M%S)

.PHONY: bench
bench: deps ## the main job: build, boot, run SCENARIOS on KERNELS, print the table
	@$(KERNEL_SH) build $(call variants_of,$(BENCH_KERNELS))
	@rootfs/build.sh > /dev/null
	@bench/bench.py run $(RUN) --kernels "$(BENCH_KERNELS)" --scenarios "$(SCENARIOS)" \
		--profile $(PROFILE) $(if $(REPEAT),--repeat $(REPEAT)) $(if $(HOSTS),--hosts $(HOSTS))

.PHONY: bench-one
bench-one: deps ## one job of a run: RUN=id K=kernel S=scenario R=repeat [PROFILE=quick]
	@test -n "$(K)" -a -n "$(S)" -a -n "$(R)" -a -n "$(RUN)" || { echo "make bench-one:" \
		"say RUN=, K=, S= and R=" >&2; exit 2; }
	@$(KERNEL_SH) build $(call variants_of,$(K))
	@rootfs/build.sh > /dev/null
	@bench/bench.py one $(RUN) $(K) $(S) $(R) --profile $(PROFILE)

# A run named by id (RUN=20261203-1200) or by directory (RUN=results/...).
run_dir = $(if $(wildcard $(1)/.),$(1),results/$(1))
PYTHON := /usr/bin/python3

.PHONY: table
table: ## print the per-step tables of a run: make table RUN=<id or dir>
	@test -n "$(RUN)" || { echo "make table: say RUN=<run id or directory>" >&2; exit 2; }
	@$(PYTHON) analysis/table.py $(call run_dir,$(RUN))

.PHONY: seconds
seconds: ## the scan fraction second by second, and where the spread comes from: make seconds RUN=<id or dir>
	@test -n "$(RUN)" || { echo "make seconds: say RUN=<run id or directory>" >&2; exit 2; }
	@$(PYTHON) analysis/seconds.py $(call run_dir,$(RUN)) $(SCENARIO)

.PHONY: report
report: ## render report.md, report.html and plots of a run: make report RUN=<id or dir>
	@test -n "$(RUN)" || { echo "make report: say RUN=<run id or directory>" >&2; exit 2; }
	@bench/deps.sh analysis
	@$(PYTHON) analysis/report.py $(call run_dir,$(RUN)) $(if $(BASELINE),--baseline $(BASELINE))

.PHONY: compare
compare: ## compare two runs (e.g. an A/A check): make compare A=<run> B=<run>
	@test -n "$(A)" -a -n "$(B)" || { echo "make compare: say A= and B= (run ids or directories)" >&2; exit 2; }
	@$(PYTHON) analysis/compare.py $(call run_dir,$(A)) $(call run_dir,$(B)) $(if $(METRIC),--metric $(METRIC))

# make peers: every variant but the revert ones (which change nothing test_memcontrol
# looks at) and the trace arms (the same kernels with a tracepoint), unless KERNELS= says otherwise.
PEER_KERNELS = $(if $(KERNELS),$(KERNELS),$(shell $(KERNEL_SH) list 2> /dev/null | awk 'NR > 1 && $$1 !~ /^revert-|\+trace$$/ { print $$1 }'))

.PHONY: peers
peers: deps ## the kernel's memcg selftests (test_memcontrol) on every variant, in the guest: make peers [RUN=id] [REPEAT=n] [HOSTS=file]
	@$(KERNEL_SH) build $(call variants_of,$(PEER_KERNELS))
	@rootfs/build.sh > /dev/null
	@bench/selftests.sh build $(call variants_of,$(PEER_KERNELS))
	@BENCH_HOSTS='$(HOSTS)' bench/selftests.sh run $(RUN) $(PEER_KERNELS) $(if $(REPEAT),--repeat $(REPEAT))
	@$(PYTHON) analysis/report.py results/$(RUN)

# make regress: each seed check on the kernel with its fix and on the
# revert that must fail, as bench/regress lists them; CHECKS= picks checks.
# The variants are built in the file's order (revert-08d1d0, which rebuilds
# most of the kernel, last).
REGRESS_ARGS = $(foreach c,$(CHECKS),--check $(c))

.PHONY: regress
regress: deps ## the merge's other fixes checked in the guest, with the fix and reverted: make regress [RUN=id] [CHECKS="kmalloc ocfs2"] [HOSTS=file]
	@kernels=$$(bench/seeds.sh kernels $(REGRESS_ARGS)) || exit 2; \
		[ -z "$$kernels" ] || $(KERNEL_SH) build $$(printf '%s\n' $$kernels | sed 's/@.*//' | awk '!seen[$$0]++')
	@rootfs/build.sh > /dev/null
	@BENCH_HOSTS='$(HOSTS)' bench/seeds.sh regress $(RUN) $(REGRESS_ARGS)

# make formula-check: the trace arms of every variant, and mglru-prop's
# under MGLRU, on the scenario that reaches both passes of reclaim.
TRACE_KERNELS = $(if $(KERNELS),$(KERNELS),control+trace v1-9783aa+trace v2-9de7ca+trace v3-1bc63f+trace patched+trace mglru-prop+trace@mglru)
TRACE_SCENARIOS = $(if $(filter-out low-steps,$(SCENARIOS)),$(SCENARIOS),low-passes)

.PHONY: formula-check
formula-check: deps ## every scan target the kernels compute, checked against their formula: make formula-check [RUN=id] [KERNELS="patched+trace"]
	@$(KERNEL_SH) build $(call variants_of,$(TRACE_KERNELS))
	@rootfs/build.sh > /dev/null
	@run='$(RUN)'; bench/bench.py run "$$run" --kernels "$(TRACE_KERNELS)" --scenarios "$(TRACE_SCENARIOS)" \
		--profile $(PROFILE) $(if $(REPEAT),--repeat $(REPEAT)) && \
		$(PYTHON) analysis/tracecheck.py "$${RESULTS:-results}/$$run"

# make seeds: the checks on kernels of your choosing (no expectations).
SEED_KERNELS = $(if $(KERNELS),$(KERNELS),patched patched@slubdebug)

.PHONY: seeds
seeds: deps ## the seed checks on KERNELS (default patched, patched@slubdebug): make seeds [RUN=id] [KERNELS=...] [CHECKS=...]
	@$(KERNEL_SH) build $(call variants_of,$(SEED_KERNELS))
	@rootfs/build.sh > /dev/null
	@bench/seeds.sh run $(RUN) $(SEED_KERNELS) $(REGRESS_ARGS)

.PHONY: kernels
kernels: deps ## build kernel variants: all, or KERNELS="control patched"
	@$(KERNEL_SH) build $(KERNELS)

.PHONY: kernel
kernel: deps ## build one kernel variant: make kernel K=control
	@test -n "$(K)" || { echo "make kernel: say which, e.g. K=control;" \
		"make list-kernels lists them" >&2; exit 2; }
	@$(KERNEL_SH) build $(K)

.PHONY: list-kernels
list-kernels: ## list the kernel variants and which are built
	@$(KERNEL_SH) list

.PHONY: add-kernel
add-kernel: ## register your kernel: NAME=x BZIMAGE=f CONFIG=c, or NAME=x PATCHES=dir [BASE=v] [FRAGMENT=f] [MODEL=6.1]
	@test -n "$(NAME)" || { echo "make add-kernel: NAME= is required" >&2; exit 2; }
	@$(KERNEL_SH) add "$(NAME)" \
		$(if $(BZIMAGE),bzimage=$(BZIMAGE)) $(if $(CONFIG),config=$(CONFIG)) \
		$(if $(PATCHES),patches=$(PATCHES)) $(if $(BASE),base=$(BASE)) \
		$(if $(FRAGMENT),fragment=$(FRAGMENT)) $(if $(MODEL),model=$(MODEL)) $(DESCRIPTION)

.PHONY: rootfs
rootfs: deps ## build the guest image (Debian 12, systemd, the agent, the workloads)
	@rootfs/build.sh

.PHONY: run
run: deps ## boot K=variant to a root shell; DRY_RUN=1 prints the QEMU command
	@test -n "$(K)" || { echo "make run: say which kernel, e.g. K=control" >&2; exit 2; }
	@bench/guest.sh shell $(K) $(if $(filter 1,$(DRY_RUN)),--dry-run) $(GUEST_OPTS)

.PHONY: bin
bin: $(BIN)/bench-load $(BIN)/bench-collect $(C_TESTS) ## build the workloads, the collector and their unit tests

$(BIN)/bench-load: $(LOAD_SRCS) $(LOAD_HDRS)
	@mkdir -p $(BIN)
	$(if $(filter 1,$(V)),,@echo "  CC      $@";)$(CC) $(BENCH_CFLAGS) -o $@ $(LOAD_SRCS) -lm

$(BIN)/bench-collect: workloads/collector.c $(COMMON_SRCS) $(COMMON_HDRS)
	@mkdir -p $(BIN)
	$(if $(filter 1,$(V)),,@echo "  CC      $@";)$(CC) $(BENCH_CFLAGS) -o $@ workloads/collector.c $(COMMON_SRCS) -lm

$(BIN)/test_%: tests/c/test_%.c tests/c/tap.h $(COMMON_SRCS) $(COMMON_HDRS)
	@mkdir -p $(BIN)
	$(if $(filter 1,$(V)),,@echo "  CC      $@";)$(CC) $(BENCH_CFLAGS) -o $@ $< $(COMMON_SRCS) -lm

.PHONY: test
test: deps ## run every test (TAP, summarised by prove)
	@prove $(if $(filter 1,$(V)),-v) tests/

# The tests that need neither root, nor a kernel build, nor a boot.
CHECK_TESTS := tests/00-lint.t tests/05-kernel-style.t tests/10-series.t \
	tests/20-variants.t tests/40-guest-job.t tests/45-jobs.t tests/46-hosts.t tests/61-c-common.t \
	tests/62-c-cgutil.t tests/63-workloads.t tests/64-collector.t \
	tests/80-analysis.t

.PHONY: check
check: deps ## the quick tests: no root, no kernel build, no boot (a few minutes)
	@prove $(if $(filter 1,$(V)),-v) $(CHECK_TESTS)

.PHONY: clean
clean: ## remove built kernels (keeps the source and object trees)
	rm -rf build/kernels

.PHONY: distclean
distclean: ## remove the whole build cache (source, objects, kernels)
	rm -rf build
