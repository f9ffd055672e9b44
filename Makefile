# Loupe — one entry point for a fresh Debian 12 machine (run as root, or with sudo).
#
#   make run     build what is needed, then serve this machine's real data
#   make test    the whole suite: pytest, frontend unit tests, end-to-end tests
#
# Every target installs what it needs first (`deps`), and `deps` is cheap when
# everything is already there, so any target works straight from `git clone`.

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:

# ---- configuration ---------------------------------------------------------

# Debian packages the project needs. Extend here (e.g. clang llvm libbpf-dev
# bpftool nfs-ganesha for the BPF probes and the NFS test server).
APT_PACKAGES ?= python3-venv chromium fonts-liberation docker-compose iproute2 procps curl systemd openssl \
	$(BPF_PACKAGES) $(LAB_PACKAGES)
# Build BPF objects (clang, bpftool for vmlinux.h) and load them (libbpf1); the
# server itself needs only libbpf1 at run time.
BPF_PACKAGES ?= clang llvm bpftool libbpf-dev libbpf1 libbpf-tools
# The NFS lab and its tests: a real NFS server, real clients, fio, the knfsd guest; setpriv
# (util-linux) and mkfs.ext4 (e2fsprogs) for the open-by-handle tests; ethtool sets the speed
# of the lab's link of a chosen speed; nftables drops segments on the lab's bridge (the wire
# decoder's loss tests).
LAB_PACKAGES ?= nfs-ganesha nfs-ganesha-vfs libnfs-utils rpcbind fio qemu-system-x86 debootstrap tshark \
	util-linux e2fsprogs ethtool nftables
# Node.js is preinstalled on the project's machines; fall back to Debian's if absent.
APT_NODE := $(if $(shell command -v node 2>/dev/null),,nodejs npm)

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
LOUPE  := $(VENV)/bin/loupe

# Where `make run` / `make demo` keep their store; LOUPE_DATA_DIR in the environment wins.
LOUPE_DATA_DIR ?= $(CURDIR)/data
# Extra flags for `loupe serve`, e.g. make demo LOUPE_ARGS='--port 9000 --demo-clients 200'
LOUPE_ARGS ?=

# Never let an npm package fetch a browser of its own: there is no network for
# it here, and Debian's /usr/bin/chromium is the one the e2e tests use.
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD := 1
export PUPPETEER_SKIP_DOWNLOAD := 1
export CHROMIUM_PATH ?= /usr/bin/chromium

NPM_CI_FLAGS := --no-audit --no-fund

# Stamps: a target is redone only when what it was made from is newer.
VENV_STAMP := $(VENV)/.loupe-deps.stamp
FE_STAMP   := frontend/node_modules/.loupe-deps.stamp
E2E_STAMP  := tests/e2e/node_modules/.loupe-deps.stamp
UI_INDEX   := backend/loupe/static/index.html

# Parts other people are still creating: the targets below skip them (loudly)
# while their package.json does not exist, instead of failing.
HAVE_FRONTEND := $(wildcard frontend/package.json)
HAVE_E2E      := $(wildcard tests/e2e/package.json)

UI_SRC := $(if $(HAVE_FRONTEND),$(shell find frontend \
	\( -name node_modules -o -name dist -o -name coverage -o -name .vite -o -name test-results \) -prune \
	-o -type f -print 2>/dev/null))

.PHONY: help deps apt-deps py-deps node-deps api-client ui bpf run demo test test-kernel bench soak compose-check clean distclean

help:
	@echo "Loupe make targets (run as root on Debian 12, or with sudo available):"
	@echo "  make run            serve this machine's real data on http://127.0.0.1:8470/ (data in ./data)"
	@echo "  make demo           the same, plus the synthetic NAS 'demo-nas'"
	@echo "  make test           pytest + frontend unit tests + e2e tests + test-kernel; fails if any fails"
	@echo "  make test-kernel    the knfsd tests in a QEMU guest (image built once into .cache/guest)"
	@echo "  make deps           apt packages, .venv (pip -e .[test]), npm ci — fast when present"
	@echo "  make ui             build the frontend into backend/loupe/static (when sources changed)"
	@echo "  make bpf            compile the CO-RE BPF probes (probes/*/*.bpf.c) with clang"
	@echo "  make api-client     regenerate frontend/openapi.json and the TypeScript client"
	@echo "  make bench          run the benchmarks (bench/)"
	@echo "  make soak           an hour of the demo at 1,000 clients: RSS and lag into docs/soak.svg (SOAK_ARGS)"
	@echo "  make compose-check  validate docker-compose.yml"
	@echo "  make clean          remove build outputs and stamps (keeps .venv, node_modules, ./data)"
	@echo "  make distclean      clean + remove .venv and node_modules (keeps ./data)"
	@echo "Variables: LOUPE_DATA_DIR, LOUPE_PORT, LOUPE_HOST, LOUPE_ARGS, PYTEST_ARGS, APT_PACKAGES"

# ---- dependencies ----------------------------------------------------------

deps: apt-deps py-deps node-deps

apt-deps:
	@bash scripts/apt-ensure.sh $(APT_PACKAGES) $(APT_NODE)

py-deps: $(VENV_STAMP)

$(VENV_STAMP): pyproject.toml | apt-deps
	@if ! [ -x $(PY) ] || ! $(PY) -c 'import sys' 2>/dev/null; then \
		echo "deps: creating $(VENV)"; rm -rf $(VENV); $(PYTHON) -m venv $(VENV); fi
	@echo "deps: pip install -e '.[test]'"
	$(PY) -m pip install -q --disable-pip-version-check -e '.[test]'
	@touch $@

node-deps: $(if $(HAVE_FRONTEND),$(FE_STAMP)) $(if $(HAVE_E2E),$(E2E_STAMP))

# npm ci when a lock file exists (it always should once committed); npm install otherwise.
define npm_install
	@if [ -f $(1)/package-lock.json ]; then \
		echo "deps: npm ci in $(1)"; npm --prefix $(1) ci $(NPM_CI_FLAGS); \
	else \
		echo "deps: WARNING: $(1)/package-lock.json missing; running npm install"; \
		npm --prefix $(1) install $(NPM_CI_FLAGS); fi
	@mkdir -p $(1)/node_modules && touch $(2)
endef

$(FE_STAMP): frontend/package.json $(wildcard frontend/package-lock.json) | apt-deps
	$(call npm_install,frontend,$@)

$(E2E_STAMP): tests/e2e/package.json $(wildcard tests/e2e/package-lock.json) | apt-deps
	$(call npm_install,tests/e2e,$@)

# ---- build -----------------------------------------------------------------

api-client: py-deps node-deps
	@[ -n "$(HAVE_FRONTEND)" ] || { echo "api-client: frontend/package.json does not exist yet" >&2; exit 1; }
	$(PY) -m loupe.openapi > frontend/openapi.json.tmp
	mv frontend/openapi.json.tmp frontend/openapi.json
	npm --prefix frontend run gen:api

ifneq ($(HAVE_FRONTEND),)
ui: $(UI_INDEX)

$(UI_INDEX): $(UI_SRC) $(FE_STAMP)
	@echo "ui: building frontend -> backend/loupe/static"
	npm --prefix frontend run build
	@[ -f $@ ] || { echo "ui: the build did not write $@" >&2; exit 1; }
	@touch $@
else
ui:
	@echo "ui: SKIPPED: frontend/package.json does not exist yet (the server runs without its UI)"
endif

# ---- BPF probes: probes/<name>/<name>.bpf.c -> <name>.bpf.o (CO-RE) ---------------

BPF_SRC  := $(wildcard probes/*/*.bpf.c)
BPF_OBJ  := $(BPF_SRC:.bpf.c=.bpf.o)
BPF_HDR  := $(wildcard probes/bpf/include/*.h)
VMLINUX  := build/bpf/vmlinux.h
BTF_FILE ?= /sys/kernel/btf/vmlinux
BPF_CFLAGS := -O2 -g -target bpf -D__TARGET_ARCH_x86 -Wall -Wno-unused-function \
	-I build/bpf -I probes/bpf/include

bpf: $(BPF_OBJ) build/bpf/nfswire-hook.bpf.o build/bpf/nfswire-floor.bpf.o

# Types come from the build machine's BTF; CO-RE relocates them to whatever
# kernel loads the object, so one build serves every kernel with BTF.
$(VMLINUX): | apt-deps
	@mkdir -p $(@D)
	@[ -r $(BTF_FILE) ] || { echo "bpf: $(BTF_FILE) missing: this kernel has no BTF to generate vmlinux.h from" >&2; exit 1; }
	bpftool btf dump file $(BTF_FILE) format c > $@.tmp
	mv $@.tmp $@

# nfswire claims its pending-call slots with compare-and-swap: BPF atomics with
# fetch (cmpxchg, xchg) are ISA v3 in clang, and Linux 5.12+ (commit 5ffa25502b5a).
probes/nfswire/nfswire.bpf.o: BPF_CFLAGS += -mcpu=v3

probes/%.bpf.o: probes/%.bpf.c $(VMLINUX) $(BPF_HDR) $(wildcard probes/*/*.bpf.h)
	clang $(BPF_CFLAGS) -c $< -o $@.tmp
	mv $@.tmp $@

# The wire decoder's programs with nothing in them: what the tc hook and bpf_stats
# cost alone under the same load (make bench, section nfswire).
build/bpf/nfswire-hook.bpf.o: probes/nfswire/nfswire.bpf.c $(VMLINUX) $(BPF_HDR) probes/nfswire/nfswire.bpf.h
	clang $(BPF_CFLAGS) -mcpu=v3 -DNFSW_HOOK_ONLY -c $< -o $@.tmp
	mv $@.tmp $@

# ... and with only what any decoder there must do (probes/nfswire/floor.bpf.h).
build/bpf/nfswire-floor.bpf.o: probes/nfswire/nfswire.bpf.c $(VMLINUX) $(BPF_HDR) $(wildcard probes/nfswire/*.bpf.h)
	clang $(BPF_CFLAGS) -mcpu=v3 -DNFSW_FLOOR -c $< -o $@.tmp
	mv $@.tmp $@

# ---- run -------------------------------------------------------------------

# $(call serve,LABEL,FLAGS): print the URL, then replace make with the server.
define serve
	@echo "Loupe$(1): http://$${LOUPE_HOST:-127.0.0.1}:$${LOUPE_PORT:-8470}/  (data: $(LOUPE_DATA_DIR); Ctrl-C stops)"
	@mkdir -p "$(LOUPE_DATA_DIR)"
	exec $(LOUPE) serve $(2) --data-dir "$(LOUPE_DATA_DIR)" $(LOUPE_ARGS)
endef

run: deps ui bpf
	$(call serve,,)

demo: deps ui bpf
	$(call serve, demo,--demo)

# ---- checks ----------------------------------------------------------------

# All suites run even when one fails; the exit status is non-zero if any failed.
test: deps ui bpf
	@PATH="$(CURDIR)/$(VENV)/bin:$$PATH" bash scripts/run-suites.sh

# The Linux kernel NFS server is tested in a Debian guest under QEMU (this host
# kernel may have no nfsd); the image is built once and cached by package versions.
test-kernel: py-deps bpf
	$(PY) -m pytest -m kernel tests/kernel $(PYTEST_ARGS)

# bench/run.py (ingest, request bodies, live, queries, storage), then the browser's part: a live week-long heat map's updates.
bench: deps ui
	@if [ -f bench/run.py ] || [ -f bench/run/__main__.py ]; then \
		$(PY) -m bench.run; \
	else echo "bench: SKIPPED: bench/run.py does not exist yet"; fi
	node bench/ui_heatmap.mjs

# An hour of `loupe serve --demo` at 1,000 clients, watched from outside (bench/soak.py).
soak: py-deps bpf
	$(PY) -m bench.soak $(SOAK_ARGS)

compose-check: apt-deps
	docker-compose -f docker-compose.yml config -q
	@echo "compose-check: docker-compose.yml is valid"

# ---- cleaning (never touches ./data) ----------------------------------------

clean:
	rm -rf backend/loupe/static frontend/dist tests/artifacts .pytest_cache build
	rm -f $(BPF_OBJ)
	rm -f $(VENV_STAMP) $(FE_STAMP) $(E2E_STAMP) frontend/openapi.json.tmp
	find backend probes tests bench -name __pycache__ -type d -prune -exec rm -rf {} + 2>/dev/null || true

distclean: clean
	rm -rf $(VENV) frontend/node_modules tests/e2e/node_modules *.egg-info
