# mt5-credit
#
#   make deps        install the Debian packages everything needs (root/sudo)
#   make             build the nginx module and the batch programs
#   make demo        deps + build, then run the main job end to end
#   make test        deps + build, then every test (what .ci/run runs)
#   make bench       the edge against pgbench and an Express peer, ingest()
#                    against a lean function doing its writes, the worker
#                    against its bound, reconciliation of a million rows a
#                    side; fsync on (BENCH_FSYNC=off); figures, not a test
#   make static      build nginx from an upstream tree with the module
#                    compiled in: make static NGINX_SRC=/path/to/nginx-x.y.z
#   make check-upstream   both upstream builds, checked (part of make test)
#   make promtool    Debian's promtool, extracted into build/tools/ (the
#                    alert rules' tests; part of make test)
#   make deb         the Debian packages, into build/deb/
#   make deb-check   install them here, check, remove, purge (root/sudo;
#                    part of make test)
#
# By default the module is built for Debian's packaged nginx from the
# nginx-dev tree (/usr/share/nginx/src) with Debian's own configure flags,
# so the .so loads into /usr/sbin/nginx.  NGINX_SRC=/path/to/nginx-x.y.z
# builds it against an upstream source tree instead.

SHELL        := /bin/bash
BUILD        := $(CURDIR)/build
DEBIAN_SRC   := /usr/share/nginx/src
NGINX_SRC    ?=
NGINX_BIN    ?= /usr/sbin/nginx
MODULE_SO    := $(BUILD)/ngx_mt5_credit_module.so

CC           ?= cc
CFLAGS       ?= -O2 -g
# Debian's hardening, every feature (dpkg-buildflags): stack protector,
# FORTIFY, format checks, relro and BIND_NOW; t/06_hardening.t reads the
# ELF of both programs for it
HARDEN       := DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --get
H_CFLAGS     := $(shell $(HARDEN) CFLAGS 2>/dev/null) \
                $(shell $(HARDEN) CPPFLAGS 2>/dev/null)
H_LDFLAGS    := $(shell $(HARDEN) LDFLAGS 2>/dev/null)
WARN         := -Wall -Wextra -Werror -Wshadow -Wpointer-arith \
                -Wstrict-prototypes -Wmissing-prototypes
PG_INC       := $(shell pg_config --includedir 2>/dev/null \
                  || echo /usr/include/postgresql)

MODULE_SRCS  := $(wildcard ngx_mt5_credit_module/*.c) \
                $(wildcard ngx_mt5_credit_module/*.h) config VERSION

# What a binary says it is (mt5credit --version, the module's start line,
# both status pages): VERSION, and the commit it was built from, with
# "-dirty" for edits not committed.  MT5CREDIT_COMMIT=... overrides it
# (a tree without .git: a source package).  build/build-id changes only
# when these do, so a new commit rebuilds what prints them, and only that.
VERSION      := $(shell cat $(CURDIR)/VERSION)
# (safe.directory: the tests run make as a user who does not own the tree,
# and must see the same commit, or they would rebuild it)
GIT          := git -c safe.directory='*' -C '$(CURDIR)'
COMMIT       := $(or $(MT5CREDIT_COMMIT),$(shell \
                  c=$$($(GIT) rev-parse --short=12 HEAD 2>/dev/null) \
                  || c=unknown; \
                  [ $$c = unknown ] || $(GIT) diff --quiet HEAD -- \
                  2>/dev/null || c=$$c-dirty; echo $$c))
BUILD_ID     := $(BUILD)/build-id

# Debian packages (bookworm).  Only these; nothing from elsewhere.  Tools
# the tests run as commands count too: curl (t/40, check-upstream-build),
# systemd (systemd-analyze verify of the units, t/97), faketime (a worker
# host with a slow clock, t/44), pgbouncer (session pooling, t/38),
# debhelper, dpkg-dev and lintian (the packages: make deb, t/96),
# zbar-tools (zbarimg reads the enrolment's QR code back, t/70).
DEB_PACKAGES := build-essential pkg-config perl \
                nginx nginx-dev \
                postgresql-15 postgresql-client-15 libpq-dev \
                redis-server redis-tools libhiredis-dev \
                libssl-dev libcurl4-openssl-dev libjansson-dev \
                libqrencode-dev libpng-dev \
                libmicrohttpd-dev openssl curl valgrind \
                wrk procps iproute2 chromium systemd faketime \
                clang libclang-rt-14-dev pgbouncer pgbackrest \
                debhelper dpkg-dev lintian zbar-tools prometheus-node-exporter

.PHONY: all module batch sim unit shims deps demo test test-unit bench bench-peer test-sdks soak \
        fuzz fuzz-build install static check-upstream deb deb-check promtool \
        clean FORCE

all: module batch sim unit shims

module: $(MODULE_SO)

# The module is configured in a private copy of the nginx tree: nginx's
# configure writes a Makefile into the tree it runs in, and the packaged
# tree belongs to root.
# nginx's configure rewrites every ".c", ".cc", ".cpp" or ".S" in a
# dynamic module's object paths to ".o" (auto/make's sed is not anchored
# to the name's end): a tree under such a directory (a mktemp dir
# "x.cQ3v", "~/.cache/...") fails to link with "No rule to make target".
# Said at once, in words.
NGX_PATH_CHECK = case '$(CURDIR)' in *.c*|*.S*) \
	    echo "make: nginx's configure cannot build a module under" \
	         "$(CURDIR): its path contains \".c\" or \".S\", which" \
	         "nginx rewrites in object names; clone it elsewhere" >&2; \
	    exit 1;; esac

ifeq ($(NGINX_SRC),)
$(MODULE_SO): $(MODULE_SRCS) $(BUILD_ID)
	@$(NGX_PATH_CHECK)
	@test -f $(DEBIAN_SRC)/conf_flags \
	    || { echo "make: $(DEBIAN_SRC) missing: run 'make deps'" >&2; exit 1; }
	rm -rf $(BUILD)/nginx-src && mkdir -p $(BUILD)
	cp -a $(DEBIAN_SRC) $(BUILD)/nginx-src
	@# (nginx's configure drops its own warning flags when CFLAGS is in the
	@# environment, as it is under dpkg-buildpackage: the flags are ours)
	cd $(BUILD)/nginx-src && . ./conf_flags \
	    && env -u CFLAGS -u CPPFLAGS -u LDFLAGS \
	       MT5CREDIT_COMMIT=$(COMMIT) ./configure \
	    --with-cc-opt="-fPIC -g -O2 -Wall -Wextra -Werror $(H_CFLAGS)" \
	    --with-ld-opt="-fPIC $(H_LDFLAGS)" \
	    "$${NGX_CONF_FLAGS[@]}" \
	    --add-dynamic-module=$(CURDIR) \
	    --builddir=$(BUILD)/nginx-src/objs > $(BUILD)/configure.log
	$(MAKE) -C $(BUILD)/nginx-src -f objs/Makefile modules \
	    > $(BUILD)/make-module.log \
	    || { cat $(BUILD)/make-module.log >&2; exit 1; }
	@# a new inode, never an overwrite: a running nginx maps the old one
	cp $(BUILD)/nginx-src/objs/ngx_mt5_credit_module.so $@.tmp
	mv -f $@.tmp $@
	@echo "built $@ for $$($(NGINX_BIN) -v 2>&1)"
else
$(MODULE_SO): $(MODULE_SRCS) $(BUILD_ID)
	@$(NGX_PATH_CHECK)
	mkdir -p $(BUILD) $(dir $@)
	cd $(NGINX_SRC) && MT5CREDIT_COMMIT=$(COMMIT) ./configure \
	    --with-compat --with-http_ssl_module \
	    --add-dynamic-module=$(CURDIR) \
	    --builddir=$(BUILD)/nginx-upstream > $(BUILD)/configure.log
	$(MAKE) -C $(NGINX_SRC) -f $(BUILD)/nginx-upstream/Makefile modules
	cp $(BUILD)/nginx-upstream/ngx_mt5_credit_module.so $@.tmp
	mv -f $@.tmp $@
endif

# nginx with the module linked in statically (--add-module).
static:
	@test -n "$(NGINX_SRC)" \
	    || { echo "make static: set NGINX_SRC=/path/to/nginx-x.y.z" >&2; \
	         exit 1; }
	@$(NGX_PATH_CHECK)
	mkdir -p $(BUILD)
	cd $(NGINX_SRC) && MT5CREDIT_COMMIT=$(COMMIT) ./configure \
	    --with-http_ssl_module --add-module=$(CURDIR) \
	    --builddir=$(BUILD)/nginx-static > $(BUILD)/configure-static.log
	$(MAKE) -C $(NGINX_SRC) -f $(BUILD)/nginx-static/Makefile binary
	@echo "built $(BUILD)/nginx-static/nginx with ngx_mt5_credit_module"


# mt5credit: the worker, the resolver, status (batch/).
# Grouped by part, as nginx groups its sources: lib (configuration, logs,
# money, PostgreSQL), mt5 (the Web API client), credit (worker, resolver,
# poll-provider, status), recon, payout, outbound (signed events to the
# broker's systems), desk (cases, events), tools.
BATCH_DIRS   := batch batch/lib batch/mt5 batch/credit batch/recon \
                batch/payout batch/outbound batch/desk batch/tools
BATCH_SRCS   := $(foreach d,$(BATCH_DIRS),$(wildcard $(d)/*.c))
BATCH_HDRS   := $(foreach d,$(BATCH_DIRS),$(wildcard $(d)/*.h))
BATCH_INC    := $(addprefix -I,$(BATCH_DIRS))
BATCH_OBJS   := $(patsubst batch/%.c,$(BUILD)/batch/%.o,$(BATCH_SRCS))
BATCH_CFLAGS := -std=gnu99 $(CFLAGS) $(H_CFLAGS) $(WARN) $(BATCH_INC) \
                -I$(PG_INC)
BATCH_LIBS   := -lpq -lhiredis -lcurl -ljansson -lcrypto -lqrencode -lpng \
                -lpthread
MT5CREDIT    := $(BUILD)/mt5credit

batch: $(MT5CREDIT)

$(BUILD)/batch/%.o: batch/%.c $(BATCH_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(BATCH_CFLAGS) -c -o $@ $<

# the one object that names the version and commit
$(BUILD)/batch/lib/mc_version.o: batch/lib/mc_version.c batch/lib/mc_version.h \
        $(BUILD_ID)
	@mkdir -p $(dir $@)
	$(CC) $(BATCH_CFLAGS) -DMC_VERSION='"$(VERSION)"' \
	    -DMC_COMMIT='"$(COMMIT)"' -c -o $@ $<

$(MT5CREDIT): $(BATCH_OBJS)
	$(CC) $(H_LDFLAGS) -o $@ $^ $(BATCH_LIBS)

# rewritten only when the version or commit changes: make compares times
$(BUILD_ID): FORCE
	@mkdir -p $(BUILD)
	@echo '$(VERSION) $(COMMIT)' | cmp -s - $@ \
	    || echo '$(VERSION) $(COMMIT)' > $@

FORCE:


# The MT5 Web API simulator, a test double (t/mt5sim/).
SIM_SRCS     := $(wildcard t/mt5sim/*.c)
SIM_OBJS     := $(patsubst t/mt5sim/%.c,$(BUILD)/t/mt5sim-obj/%.o,$(SIM_SRCS))
MT5SIM       := $(BUILD)/t/mt5sim

sim: $(MT5SIM)

$(BUILD)/t/mt5sim-obj/%.o: t/mt5sim/%.c $(wildcard t/mt5sim/*.h)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu99 $(CFLAGS) $(WARN) \
	    $$(pkg-config --cflags libmicrohttpd) -c -o $@ $<

$(MT5SIM): $(SIM_OBJS)
	$(CC) -o $@ $^ $$(pkg-config --libs libmicrohttpd) -ljansson -lcrypto \
	    -lpthread


# Test doubles loaded into our own programs with LD_PRELOAD (t/shim/).
SHIMS := $(BUILD)/t/mc_fsync_shim.so

shims: $(SHIMS)

$(BUILD)/t/mc_fsync_shim.so: t/shim/mc_fsync_shim.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu99 $(CFLAGS) $(WARN) -shared -fPIC -o $@ $< -ldl


# C unit tests: no servers, pure functions, vectors with their own clock.
UNIT_TESTS := $(BUILD)/t/signature_vectors_test $(BUILD)/t/adyen_test \
              $(BUILD)/t/mt5sim_auth_test \
              $(BUILD)/t/mc_money_test $(BUILD)/t/mc_mt5_auth_test \
              $(BUILD)/t/mc_mt5_client_test $(BUILD)/t/mc_settle_test \
              $(BUILD)/t/mc_merkle_test $(BUILD)/t/mc_whsig_test

unit: $(UNIT_TESTS)

$(BUILD)/t/signature_vectors_test: t/unit/signature_vectors_test.c \
        ngx_mt5_credit_module/ngx_mt5_credit_signature.c \
        ngx_mt5_credit_module/ngx_mt5_credit_signature.h
	@mkdir -p $(dir $@)
	$(CC) -std=c99 $(CFLAGS) -Wall -Wextra -Werror \
	    -Ingx_mt5_credit_module -o $@ $(filter %.c,$^) -ljansson -lcrypto


$(BUILD)/t/adyen_test: t/unit/adyen_test.c \
        ngx_mt5_credit_module/ngx_mt5_credit_adyen.c \
        ngx_mt5_credit_module/ngx_mt5_credit_signature.c \
        ngx_mt5_credit_module/ngx_mt5_credit_adyen.h \
        ngx_mt5_credit_module/ngx_mt5_credit_signature.h
	@mkdir -p $(dir $@)
	$(CC) -std=c99 $(CFLAGS) -Wall -Wextra -Werror \
	    -Ingx_mt5_credit_module -o $@ $(filter %.c,$^) -ljansson -lcrypto

$(BUILD)/t/mt5sim_auth_test: t/unit/mt5sim_auth_test.c t/mt5sim/mt5sim_auth.c \
        t/mt5sim/mt5sim_text.c t/mt5sim/mt5sim_money.c t/mt5sim/mt5sim.h
	@mkdir -p $(dir $@)
	$(CC) -std=gnu99 $(CFLAGS) $(WARN) -It/mt5sim -o $@ \
	    $(filter %.c,$^) -ljansson -lcrypto

$(BUILD)/t/mc_money_test: t/unit/mc_money_test.c batch/lib/mc_money.c \
        batch/lib/mc_money.h
	@mkdir -p $(dir $@)
	$(CC) -std=gnu99 $(CFLAGS) $(WARN) $(BATCH_INC) -o $@ $(filter %.c,$^)

$(BUILD)/t/mc_merkle_test: t/unit/mc_merkle_test.c batch/lib/mc_merkle.c \
        batch/lib/mc_merkle.h
	@mkdir -p $(dir $@)
	$(CC) -std=gnu99 $(CFLAGS) $(WARN) $(BATCH_INC) -o $@ $(filter %.c,$^) \
	    -lcrypto

$(BUILD)/t/mc_whsig_test: t/unit/mc_whsig_test.c batch/outbound/mc_whsig.c \
        batch/outbound/mc_whsig.h batch/lib/mc_log.c batch/lib/mc_log.h
	@mkdir -p $(dir $@)
	$(CC) -std=gnu99 $(CFLAGS) $(WARN) $(BATCH_INC) -o $@ $(filter %.c,$^) \
	    -lcrypto

$(BUILD)/t/mc_settle_test: t/unit/mc_settle_test.c batch/recon/mc_settle.c \
        batch/recon/mc_csv.c batch/lib/mc_money.c batch/recon/mc_settle.h batch/recon/mc_csv.h \
        batch/lib/mc_money.h
	@mkdir -p $(dir $@)
	$(CC) -std=gnu99 $(CFLAGS) $(WARN) $(BATCH_INC) -o $@ $(filter %.c,$^)

$(BUILD)/t/mc_mt5_auth_test: t/unit/mc_mt5_auth_test.c batch/mt5/mc_mt5_auth.c \
        batch/mt5/mc_mt5_auth.h
	@mkdir -p $(dir $@)
	$(CC) -std=gnu99 $(CFLAGS) $(WARN) $(BATCH_INC) -o $@ $(filter %.c,$^) \
	    -lcrypto


# driven by t/41_mt5_client.t against the simulator, step by step
$(BUILD)/t/mc_mt5_client_test: t/unit/mc_mt5_client_test.c batch/mt5/mc_mt5.c \
        batch/mt5/mc_mt5_auth.c batch/lib/mc_money.c batch/mt5/mc_mt5.h \
        batch/mt5/mc_mt5_auth.h batch/lib/mc_money.h
	@mkdir -p $(dir $@)
	$(CC) -std=gnu99 $(CFLAGS) $(WARN) $(BATCH_INC) -o $@ $(filter %.c,$^) \
	    -lcurl -ljansson -lcrypto


# Installs what is missing, as root or through sudo.  apt-get runs under
# "env" so that its settings survive sudo, which resets the environment
# (APT_CONFIG is passed on too: t/root/ points it at a private list
# directory).  A package with no candidate means the lists are missing
# or stale (a fresh machine has none): "apt-get update" first.  An
# install that fails anyway is tried once more after an update, for
# lists that name versions the mirror no longer has.
APT_GET = $(if $(filter 0,$(shell id -u)),,sudo) env \
          DEBIAN_FRONTEND=noninteractive \
          $${APT_CONFIG:+APT_CONFIG=$$APT_CONFIG} apt-get

deps:
	@missing=$$(for p in $(DEB_PACKAGES); do \
	    dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null \
	        | grep -q 'install ok installed' || echo $$p; done); \
	if [ -z "$$missing" ]; then \
	    echo "deps: all Debian packages present"; exit 0; \
	fi; \
	echo "deps: missing:" $$missing; \
	if [ "$$(id -u)" != 0 ] && ! command -v sudo >/dev/null; then \
	    echo "make deps: not root and no sudo: run 'make deps' as root," \
	         "or install sudo" >&2; \
	    exit 1; \
	fi; \
	unknown=$$(for p in $$missing; do \
	    apt-cache show --no-all-versions $$p >/dev/null 2>&1 || echo $$p; \
	    done); \
	if [ -n "$$unknown" ]; then \
	    echo "deps: no candidate for" $$unknown": apt-get update"; \
	    $(APT_GET) update || exit 1; \
	fi; \
	$(APT_GET) install -y --no-install-recommends $$missing \
	|| { echo "deps: install failed: apt-get update, then once more"; \
	     $(APT_GET) update \
	     && $(APT_GET) install -y --no-install-recommends $$missing; } \
	|| exit 1; \
	still=$$(for p in $$missing; do \
	    dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null \
	        | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$still" ]; then \
	    echo "make deps: still not installed:" $$still >&2; exit 1; \
	fi; \
	echo "deps: installed" $$missing

demo: deps all
	t/run-as-tester perl t/demo.pl

test: deps all fuzz-build deb promtool test-sdks
	t/run-tests
	t/check-upstream-build

test-unit: unit
	$(BUILD)/t/signature_vectors_test t/vectors
	$(BUILD)/t/adyen_test t/vectors/adyen.json
	$(BUILD)/t/mt5sim_auth_test
	$(BUILD)/t/mc_money_test
	$(BUILD)/t/mc_mt5_auth_test
	$(BUILD)/t/mc_settle_test
	$(BUILD)/t/mc_merkle_test
	$(BUILD)/t/mc_whsig_test $$(mktemp -d)

check-upstream: deps
	t/check-upstream-build

# The Express peer the edge is compared with: its npm packages, into the
# build tree (never by the tests; npm and node from Debian when missing).
BENCH_PEER := $(BUILD)/bench-peer

bench-peer: $(BENCH_PEER)/node_modules/.installed

$(BENCH_PEER)/node_modules/.installed: t/bench/peer/package.json
	@command -v npm >/dev/null || $(APT_GET) install -y \
	    --no-install-recommends nodejs npm
	mkdir -p $(BENCH_PEER)
	cp t/bench/peer/package.json $(BENCH_PEER)/
	cd $(BENCH_PEER) && npm install --no-audit --no-fund --omit=dev
	chmod -R a+rX $(BENCH_PEER)
	touch $@

# Providers' official libraries, test-only: the tests check what the edge
# accepts and reads against them (t/sdk/; exact versions from its lock
# file, into the build tree; npm and node from Debian when missing)
TEST_SDKS := $(BUILD)/test-sdks

test-sdks: $(TEST_SDKS)/node_modules/.installed

$(TEST_SDKS)/node_modules/.installed: t/sdk/package.json t/sdk/package-lock.json
	@command -v npm >/dev/null || $(APT_GET) install -y \
	    --no-install-recommends nodejs npm
	mkdir -p $(TEST_SDKS)
	cp t/sdk/package.json t/sdk/package-lock.json $(TEST_SDKS)/
	cd $(TEST_SDKS) && npm ci --no-audit --no-fund --omit=dev
	chmod -R a+rX $(TEST_SDKS)
	touch $@

bench: deps all bench-peer
	t/run-as-tester perl t/bench/edge_bench.pl
	t/run-as-tester perl t/bench/worker_bench.pl
	t/run-as-tester perl t/bench/recon_bench.pl
	t/run-as-tester perl t/bench/growth_bench.pl
	t/run-as-tester perl t/bench/risk_bench.pl
	t/run-as-tester perl t/bench/journal_bench.pl

# libFuzzer targets (t/fuzz/), with ASan and UBSan: the signature parsers
# and check, the module's body assembly, the MT5 answer readers, the
# settlement readers.  "make fuzz" runs each for FUZZ_TIME seconds from its
# checked-in seed corpus; the tests run each briefly (t/95_fuzz.t).
FUZZ_CC     ?= clang
FUZZ_CFLAGS := -g -O1 -fsanitize=fuzzer,address,undefined \
               -fno-sanitize-recover=all
FUZZ_TIME   ?= 60
NGX_TREE    := $(BUILD)/nginx-src
NGX_INCS    := $(addprefix -I$(NGX_TREE)/, src/core src/event \
                 src/event/modules src/os/unix src/http src/http/modules \
                 src/http/v2 objs)
FUZZERS     := $(addprefix $(BUILD)/fuzz/, fuzz_signature fuzz_settlement \
                 fuzz_mt5_answer fuzz_body fuzz_adyen)

fuzz-build: $(FUZZERS)

$(BUILD)/fuzz/fuzz_signature: t/fuzz/fuzz_signature.c \
        ngx_mt5_credit_module/ngx_mt5_credit_signature.c \
        ngx_mt5_credit_module/ngx_mt5_credit_signature.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -Ingx_mt5_credit_module -o $@ \
	    $(filter %.c,$^) -lcrypto

$(BUILD)/fuzz/fuzz_adyen: t/fuzz/fuzz_adyen.c \
        ngx_mt5_credit_module/ngx_mt5_credit_adyen.c \
        ngx_mt5_credit_module/ngx_mt5_credit_signature.c \
        ngx_mt5_credit_module/ngx_mt5_credit_adyen.h \
        ngx_mt5_credit_module/ngx_mt5_credit_signature.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -Ingx_mt5_credit_module -o $@ \
	    $(filter %.c,$^) -lcrypto

$(BUILD)/fuzz/fuzz_settlement: t/fuzz/fuzz_settlement.c batch/recon/mc_settle.c \
        batch/recon/mc_csv.c batch/lib/mc_money.c batch/recon/mc_settle.h batch/recon/mc_csv.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(BATCH_INC) -o $@ $(filter %.c,$^)

# includes batch/mt5/mc_mt5.c itself: its static readers are what is fuzzed
$(BUILD)/fuzz/fuzz_mt5_answer: t/fuzz/fuzz_mt5_answer.c batch/mt5/mc_mt5.c \
        batch/mt5/mc_mt5_auth.c batch/lib/mc_money.c batch/mt5/mc_mt5.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(BATCH_INC) -o $@ t/fuzz/fuzz_mt5_answer.c \
	    batch/mt5/mc_mt5_auth.c batch/lib/mc_money.c -lcurl -ljansson -lcrypto

# against the nginx tree the module is configured in (make module)
$(BUILD)/fuzz/fuzz_body: t/fuzz/fuzz_body.c \
        ngx_mt5_credit_module/ngx_mt5_credit_body.c $(MODULE_SO)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -Wno-unused-parameter $(NGX_INCS) \
	    -Ingx_mt5_credit_module -I$(PG_INC) -o $@ t/fuzz/fuzz_body.c \
	    ngx_mt5_credit_module/ngx_mt5_credit_body.c

fuzz: deps all fuzz-build
	t/run-as-tester t/fuzz/run $(FUZZ_TIME)

# Installation, for packagers and platform teams: DESTDIR stages, PREFIX
# places.  The module goes where the packaged nginx loads modules from;
# configuration examples never overwrite a live /etc (they go to
# $(SHAREDIR)/examples); systemd units are rendered with these paths.
PREFIX          ?= /usr/local
BINDIR          ?= $(PREFIX)/bin
SHAREDIR        ?= $(PREFIX)/share/mt5credit
DOCDIR          ?= $(PREFIX)/share/doc/mt5credit
SYSCONFDIR      ?= /etc
STATEDIR        ?= /var/lib/mt5credit
# the units' StateDirectory= is a name under /var/lib
STATEDIR_NAME    = $(patsubst /var/lib/%,%,$(STATEDIR))
UNITDIR         ?= $(PREFIX)/lib/systemd/system
NGX_MODULES_DIR ?= $(shell $(NGINX_BIN) -V 2>&1 \
                     | sed -n 's/.*--modules-path=\([^ ]*\).*/\1/p')
UNITS           := $(patsubst batch/systemd/%.in,%,\
                     $(wildcard batch/systemd/*.in))
RENDER           = sed -e 's|@BINDIR@|$(BINDIR)|g' \
                       -e 's|@DOCDIR@|$(DOCDIR)|g' \
                       -e 's|@SHAREDIR@|$(SHAREDIR)|g' \
                       -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' \
                       -e 's|@STATEDIR@|$(STATEDIR)|g' \
                       -e 's|@STATEDIR_NAME@|$(STATEDIR_NAME)|g' \
                       -e 's|@NGX_MODULES_DIR@|$(NGX_MODULES_DIR)|g'

install: $(MODULE_SO) $(MT5CREDIT)
	@test -n "$(NGX_MODULES_DIR)" \
	    || { echo "make install: set NGX_MODULES_DIR" >&2; exit 1; }
	@case "$(STATEDIR)" in /var/lib/?*) ;; *) echo "make install:" \
	    "STATEDIR must be under /var/lib (the units' StateDirectory=)" >&2; \
	    exit 1;; esac
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(NGX_MODULES_DIR) \
	    $(DESTDIR)$(SHAREDIR)/sql $(DESTDIR)$(SHAREDIR)/examples \
	    $(DESTDIR)$(SHAREDIR)/console \
	    $(DESTDIR)$(DOCDIR)/examples $(DESTDIR)$(UNITDIR)
	install -m 0755 $(MT5CREDIT) $(DESTDIR)$(BINDIR)/mt5credit
	install -m 0644 $(MODULE_SO) $(DESTDIR)$(NGX_MODULES_DIR)/
	install -m 0644 sql/*.sql $(DESTDIR)$(SHAREDIR)/sql/
	install -m 0755 sql/migrate $(DESTDIR)$(SHAREDIR)/sql/migrate
	install -m 0644 ngx_mt5_credit_module/console/* \
	    $(DESTDIR)$(SHAREDIR)/console/
	install -m 0644 docs/*.md $(DESTDIR)$(DOCDIR)/
	install -m 0644 docs/examples/* $(DESTDIR)$(DOCDIR)/examples/
	# the alert rules, their tests and the dashboard, where minimal
	# images (which drop /usr/share/doc) keep them
	install -d $(DESTDIR)$(SHAREDIR)/monitoring
	install -m 0644 docs/examples/mt5credit-alerts.yml \
	    docs/examples/mt5credit-alerts.test.yml \
	    docs/examples/mt5credit-dashboard.json \
	    $(DESTDIR)$(SHAREDIR)/monitoring/
	install -m 0644 batch/mt5credit.conf.example \
	    $(DESTDIR)$(SHAREDIR)/examples/mt5credit.conf
	for f in ngx_mt5_credit_module/conf/*.conf; do \
	    $(RENDER) $$f > $(DESTDIR)$(SHAREDIR)/examples/$${f##*/} || exit 1; \
	done
	for u in $(UNITS); do \
	    $(RENDER) batch/systemd/$$u.in > $(DESTDIR)$(UNITDIR)/$$u || exit 1; \
	    chmod 0644 $(DESTDIR)$(UNITDIR)/$$u; \
	done
	@echo "installed into $(DESTDIR)$(PREFIX) (module: $(DESTDIR)$(NGX_MODULES_DIR))"

# promtool, for the tests of the alert rules (t/08): from Debian's
# prometheus package, extracted into build/tools/ and not installed, so no
# Prometheus server is set up or started on the machine.
PROMTOOL     := $(BUILD)/tools/promtool

promtool: $(PROMTOOL)

$(PROMTOOL):
	@mkdir -p $(BUILD)/tools/deb
	cd $(BUILD)/tools/deb && rm -f prometheus_*.deb \
	    && apt-get download prometheus > download.log 2>&1 \
	    || { cat $(BUILD)/tools/deb/download.log >&2; \
	         echo "make promtool: apt-get download prometheus failed" >&2; \
	         exit 1; }
	dpkg-deb -x $(BUILD)/tools/deb/prometheus_*.deb $(BUILD)/tools/deb/root
	cp $(BUILD)/tools/deb/root/usr/bin/promtool $@.tmp && mv -f $@.tmp $@
	rm -rf $(BUILD)/tools/deb
	@$@ --version 2>&1 | head -1

# Debian packages (debian/): libnginx-mod-http-mt5-credit and mt5credit,
# built by dpkg-buildpackage from a copy of this tree (no .git, no build/)
# into build/deb/.  "make deb-check" installs them on this machine, checks
# the module is enabled and loads, removes and purges them, and checks
# nothing is left behind (t/root/30_deb_install_cycle.t, as root or
# through sudo; "make test" runs it too).
DEB_ARCH     := $(shell dpkg --print-architecture 2>/dev/null)
DEB_DIR      := $(BUILD)/deb
DEBS         := $(DEB_DIR)/libnginx-mod-http-mt5-credit_$(VERSION)_$(DEB_ARCH).deb \
                $(DEB_DIR)/mt5credit_$(VERSION)_$(DEB_ARCH).deb
DEB_INPUTS   := Makefile $(MODULE_SRCS) $(BATCH_SRCS) $(BATCH_HDRS) \
                $(wildcard debian/* debian/source/* sql/* batch/systemd/* \
                  batch/*.example docs/*.md docs/*.1 docs/examples/* \
                  ngx_mt5_credit_module/conf/*)
DEB_TREE     := $(DEB_DIR)/mt5-credit-$(VERSION)
SUDO          = $(if $(filter 0,$(shell id -u)),,sudo)

deb: $(DEBS)

$(DEBS) &: $(DEB_INPUTS) $(BUILD_ID)
	@head -1 debian/changelog | grep -q '^mt5-credit ($(VERSION))' \
	    || { echo "make deb: debian/changelog's first entry is not" \
	              "VERSION ($(VERSION))" >&2; exit 1; }
	rm -rf $(DEB_DIR) && mkdir -p $(DEB_TREE)
	tar -C $(CURDIR) --exclude=./build --exclude=./.git -cf - . \
	    | tar -C $(DEB_TREE) -xf -
	@# (a build of its own: not silenced or parallelised by this make)
	cd $(DEB_TREE) && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
	    MT5CREDIT_COMMIT=$(COMMIT) \
	    dpkg-buildpackage -b -us -uc > $(DEB_DIR)/build.log 2>&1 \
	    || { tail -40 $(DEB_DIR)/build.log >&2; \
	         echo "make deb: failed; all of it in $(DEB_DIR)/build.log" >&2; \
	         exit 1; }
	@# the module's compile lines, for what reads its flags (t/96)
	cp $(DEB_TREE)/build/make-module.log $(DEB_DIR)/module-build.log
	rm -rf $(DEB_TREE)
	@for d in $(DEBS); do echo "built $$d"; done

deb-check: deb
	$(SUDO) prove -v t/root/30_deb_install_cycle.t

# The chaos soak with its exactly-once checker (t/soak/soak.pl): 10,000
# payments by default; SOAK_ARGS="--n 50000 --seed 7" for others.
SOAK_ARGS ?= --n 10000

soak: deps all
	t/run-as-tester perl t/soak/soak.pl $(SOAK_ARGS)

clean:
	rm -rf $(BUILD)
