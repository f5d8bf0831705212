# ringkeeper - build, test, demo.
#   make            build build/ringkeeper
#   make deps       install the Debian packages the build and tests need (idempotent)
#   make test       unit tests, the Debian package (make deb), root/BPF integration tests, ASan+UBSan, valgrind, vmtest
#   make fuzz       libFuzzer on the buffer file parser (FUZZ_SECONDS=45)
#   make vmtest     the BPF tests inside Debian's 6.1 and 6.12 kernels (virtme-ng)
#   make demo       record a multi-threaded demo workload and show the result
#   make bench      measured figures (cost per switch, locked memory vs perf, ...)
#   make deb        the Debian packages (dpkg-buildpackage) into build/deb/, checked by lintian
#   make install    binary, ringkeeper(8) and bash completion under PREFIX (/usr/local),
#                   DESTDIR for staging; make uninstall removes them
#   make SANITIZE=1 build with ASan+UBSan into build-san/
#   V=1             show commands
OUTPUT ?= build
ifeq ($(SANITIZE),1)
OUTPUT := build-san
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
endif

CLANG ?= clang
CC ?= gcc
BPFTOOL ?= $(shell command -v bpftool 2>/dev/null || echo /usr/sbin/bpftool)
ARCH := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
VMLINUX_DIR := vmlinux/$(ARCH)

# The release, and the commit it was built from when there is one.
VERSION := 0.14
GITREV := $(shell git rev-parse --short HEAD 2>/dev/null)
RK_VERSION := $(VERSION)$(if $(GITREV),-g$(GITREV))
PREFIX ?= /usr/local
DESTDIR ?=

CFLAGS ?= -O2 -g
WARN := -Wall -Wextra -Werror
CPPFLAGS += -Ibpf -Iuser -I$(OUTPUT) -D_GNU_SOURCE
LIBS := -lbpf -lelf -lz -lipt -lpthread
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -I$(VMLINUX_DIR) -Ibpf $(WARN) \
	-Wno-unused-parameter

ifeq ($(V),1)
Q =
msg =
else
Q = @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

# user/: one directory per subsystem; main.c dispatches to user/cmd/ (scripts/layers.py
# checks that each includes only the layers below it).
USER_DIRS := lib format recorder view crash cmd
CPPFLAGS += $(addprefix -Iuser/,$(USER_DIRS))
USER_SRCS := $(foreach d,$(USER_DIRS),$(wildcard user/$(d)/*.c))
# What the unit and integration tests link: all but the commands and the recorder's loop
# (which needs the BPF skeleton).
LIB_SRCS := $(filter-out user/cmd/% user/recorder/record.c user/recorder/rec_%.c,$(USER_SRCS)) \
	user/format/gc.c
LIB_SRCS := $(sort $(LIB_SRCS))
USER_OBJS := $(patsubst user/%.c,$(OUTPUT)/user/%.o,$(USER_SRCS))
LIB_OBJS := $(patsubst user/%.c,$(OUTPUT)/user/%.o,$(LIB_SRCS))
BPF_OBJ := $(OUTPUT)/bpf/ringkeeper.bpf.o
SKEL := $(OUTPUT)/ringkeeper.skel.h
BIN := $(OUTPUT)/ringkeeper

# tests/common: what both test binaries use.
UNIT_SRCS := $(wildcard tests/unit/*.c tests/common/*.c)
UNIT_BIN := $(OUTPUT)/tests/unit_tests
INTEG_SRCS := $(wildcard tests/integration/*.c tests/common/*.c)
INTEG_BIN := $(OUTPUT)/tests/integration_tests
WORKLOAD := $(OUTPUT)/tests/workload
CRASHER := $(OUTPUT)/tests/crasher
MAN := $(OUTPUT)/man/ringkeeper.8
BENCH_DIR := $(OUTPUT)/bench
BENCH_BINS := $(BENCH_DIR)/pingpong $(BENCH_DIR)/idlebusy $(BENCH_DIR)/noop_attach \
	$(BENCH_DIR)/noop.bpf.o $(BENCH_DIR)/clock.bpf.o $(BENCH_DIR)/stamp.bpf.o $(BENCH_DIR)/fanout $(BENCH_DIR)/bursts $(BENCH_DIR)/statson \
	$(BENCH_DIR)/churn

.PHONY: test-bins FORCE
.PHONY: deb man install uninstall bench all deps test unit integration valgrind sanitize vmtest fuzz demo clean format check-format
.DEFAULT_GOAL := all

all: $(BIN) $(WORKLOAD) $(CRASHER) $(MAN)

$(OUTPUT) $(OUTPUT)/bpf $(OUTPUT)/user $(OUTPUT)/tests:
	$(Q)mkdir -p $@

# Rewritten only when the version changes, so main.o is rebuilt exactly then.
$(OUTPUT)/version.h: FORCE | $(OUTPUT)
	$(Q)echo '#define RK_VERSION "$(RK_VERSION)"' > $@.tmp; \
		cmp -s $@.tmp $@ && rm -f $@.tmp || mv $@.tmp $@
FORCE:
$(OUTPUT)/user/main.o: $(OUTPUT)/version.h

$(BPF_OBJ): bpf/ringkeeper.bpf.c | $(OUTPUT)/bpf
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -MMD -MP -c $< -o $@

$(SKEL): $(BPF_OBJ)
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name ringkeeper_bpf > $@.tmp && mv $@.tmp $@

# The loader includes the skeleton (through rec.h): it must exist before dependency
# files do, also for cmd_record.c (make -j2 of a fresh clone compiled it first).
$(patsubst user/%.c,$(OUTPUT)/user/%.o,$(wildcard user/recorder/rec*.c) user/cmd/cmd_record.c): $(SKEL)

$(OUTPUT)/user/%.o: user/%.c | $(OUTPUT)/user
	$(Q)mkdir -p $(dir $@)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(SANFLAGS) $(WARN) $(CPPFLAGS) -MMD -MP -c $< -o $@

$(OUTPUT)/user/main.o: user/main.c | $(OUTPUT)/user
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(SANFLAGS) $(WARN) $(CPPFLAGS) -MMD -MP -c $< -o $@

$(BIN): $(USER_OBJS) $(OUTPUT)/user/main.o
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(SANFLAGS) $(LDFLAGS) $^ $(LIBS) -o $@

$(OUTPUT)/tests/%.o: tests/%.c | $(OUTPUT)/tests
	$(Q)mkdir -p $(dir $@)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(SANFLAGS) $(WARN) -Wno-missing-field-initializers $(CPPFLAGS) \
		-Itests/common -MMD -MP -c $< -o $@

# The recorder's retention queue is unit-tested too (test_retention.c: its work, counted).
UNIT_REC_OBJS := $(OUTPUT)/user/recorder/rec_files.o $(OUTPUT)/user/recorder/rec_src.o
$(OUTPUT)/tests/unit/test_retention.o: $(SKEL)

$(UNIT_BIN): $(patsubst tests/%.c,$(OUTPUT)/tests/%.o,$(UNIT_SRCS)) $(LIB_OBJS) $(UNIT_REC_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(SANFLAGS) $^ -lcriterion $(LIBS) -o $@

$(INTEG_BIN): $(patsubst tests/%.c,$(OUTPUT)/tests/%.o,$(INTEG_SRCS)) $(LIB_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(SANFLAGS) $^ -lcriterion $(LIBS) -o $@

# --- benchmarks (not part of make test: they print figures, they do not judge) --
$(BENCH_DIR):
	$(Q)mkdir -p $@

$(BENCH_DIR)/%.bpf.o: tests/bench/%.bpf.c | $(BENCH_DIR)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BENCH_DIR)/noop_attach: tests/bench/noop_attach.c | $(BENCH_DIR)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(WARN) $< -lbpf -lelf -lz -o $@

$(BENCH_DIR)/pingpong: tests/bench/pingpong.c | $(BENCH_DIR)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(WARN) $< -lbpf -lelf -lz -lpthread -o $@

$(BENCH_DIR)/statson: tests/bench/statson.c | $(BENCH_DIR)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(WARN) $< -lbpf -lelf -lz -o $@

$(BENCH_DIR)/%: tests/bench/%.c | $(BENCH_DIR)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(WARN) $< -lpthread -o $@

bench: deps $(BIN) $(BENCH_BINS)
	./scripts/bench.sh $(BENCH_ARGS)

$(WORKLOAD): tests/workload.c | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -fno-omit-frame-pointer $(WARN) -MMD -MP $< -lpthread -o $@

$(CRASHER): tests/crasher.c | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -fno-omit-frame-pointer $(WARN) -MMD -MP $< -lpthread -o $@

# --- set-up -----------------------------------------------------------------
DEB_PKGS := clang llvm libbpf-dev bpftool libipt-dev libcriterion-dev libelf-dev zlib1g-dev \
	pkg-config make gcc valgrind clang-format linux-perf libclang-rt-14-dev gdb elfutils \
	python3-jsonschema libc6-dbg python3-venv chromium debhelper dpkg-dev fakeroot lintian
deps:
	@missing=$$(for p in $(DEB_PKGS); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' \
		|| echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "make deps: installing$$(echo ' '$$missing)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			--no-install-recommends $$missing >/dev/null || exit 1; \
	else echo "make deps: all packages present"; fi

# --- tests ------------------------------------------------------------------
# Criterion's summary counts a skipped test nowhere: each run also writes TAP,
# and every test skipped for a reason is printed with it, whatever the status.
say_skips = grep '\# SKIP' $(1) | grep -v '\# SKIP test was skipped$$' | \
	sed 's/^ok - /skipped: /; s/  \# SKIP /: /' || true

unit: $(UNIT_BIN) $(BIN)
	RK_BIN=$(abspath $(BIN)) $(UNIT_BIN) --jobs 2 --tap=$(OUTPUT)/unit.tap; rc=$$?; \
		$(call say_skips,$(OUTPUT)/unit.tap); exit $$rc

# The official Perfetto protos (PyPI), which the tests read every --perfetto export with,
# and the Perfetto UI (PyPI too), which scripts/perfetto-ui.py opens one in (chromium).
PERFETTO_VENV := build/perfetto-venv

integration: $(BIN) $(WORKLOAD) $(CRASHER) $(INTEG_BIN) $(BENCH_DIR)/fanout $(BENCH_DIR)/bursts
	scripts/perfetto-venv.sh $(PERFETTO_VENV)
	RK_BIN=$(abspath $(BIN)) RK_WORKLOAD=$(abspath $(WORKLOAD)) RK_SANITIZED=$(SANITIZE) \
		RK_PERFETTO_PY=$(abspath $(PERFETTO_VENV))/bin/python \
		RK_FANOUT=$(abspath $(BENCH_DIR)/fanout) RK_CRASHER=$(abspath $(CRASHER)) \
		RK_BURSTS=$(abspath $(BENCH_DIR)/bursts) \
		$(INTEG_BIN) --jobs 1 --tap=$(OUTPUT)/integration.tap; rc=$$?; \
		$(call say_skips,$(OUTPUT)/integration.tap); exit $$rc

# perf, gdb and the binutils/elfutils readers (run by tests to read what we wrote) are
# not ours to check.
valgrind: $(UNIT_BIN) $(BIN)
	RK_BIN=$(abspath $(BIN)) valgrind --error-exitcode=99 --leak-check=full \
		--errors-for-leak-kinds=definite,indirect --trace-children=yes \
		--trace-children-skip='*/perf,*/gdb,*/gcore,*/readelf,*/eu-readelf,*/cmp,*/sh,*/cat,*/sleep' -q $(UNIT_BIN) --jobs 2 \
		--tap=$(OUTPUT)/valgrind.tap; rc=$$?; \
		$(call say_skips,$(OUTPUT)/valgrind.tap); exit $$rc

# What the test steps run, built ahead on every CPU (the steps themselves run
# their tests one suite at a time).
NPROC := $(shell nproc 2>/dev/null || echo 1)
TEST_BINS := $(BIN) $(WORKLOAD) $(CRASHER) $(UNIT_BIN) $(INTEG_BIN) $(BENCH_DIR)/fanout \
	$(BENCH_DIR)/bursts
test-bins: $(TEST_BINS)

sanitize:
	$(MAKE) -j$(NPROC) SANITIZE=1 test-bins
	$(MAKE) SANITIZE=1 unit integration

# libFuzzer on the buffer file parser and printers, for a bounded time, from the
# seed corpus (regenerated through the writer) plus the committed findings.
FUZZ_DIR := $(OUTPUT)/fuzz
FUZZ_SECONDS ?= 45
FUZZ_SRCS := user/format/bufile.c user/format/session.c user/format/symtab.c user/view/show.c user/view/symbols.c user/lib/util.c \
	user/format/tracedata.c user/view/timeline.c user/view/schedsum.c user/format/elfcore.c \
	user/view/offcpu.c
$(FUZZ_DIR)/fuzz_bufile: tests/fuzz/fuzz_bufile.c $(FUZZ_SRCS) $(wildcard user/*/*.h bpf/*.h)
	$(Q)mkdir -p $(FUZZ_DIR)
	$(call msg,FUZZ-CC,$@)
	$(Q)$(CLANG) -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
		$(CPPFLAGS) tests/fuzz/fuzz_bufile.c $(FUZZ_SRCS) -lelf -lz -o $@

$(FUZZ_DIR)/mkcorpus: tests/fuzz/mkcorpus.c $(LIB_OBJS)
	$(Q)mkdir -p $(FUZZ_DIR)
	$(Q)$(CC) $(CFLAGS) $(WARN) $(CPPFLAGS) $^ $(LIBS) -o $@

fuzz: $(FUZZ_DIR)/fuzz_bufile $(FUZZ_DIR)/mkcorpus
	rm -rf $(FUZZ_DIR)/corpus && mkdir -p $(FUZZ_DIR)/corpus
	$(FUZZ_DIR)/mkcorpus $(FUZZ_DIR)/corpus
	cp tests/fuzz/corpus/* $(FUZZ_DIR)/corpus/ 2>/dev/null || true
	$(FUZZ_DIR)/fuzz_bufile -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=1024 \
		-max_len=16384 -print_final_stats=1 $(FUZZ_DIR)/corpus

# The portability subset inside Debian's 6.1 and 6.12 kernels (virtme-ng, QEMU TCG).
# VMTEST_KERNELS="/path/to/vmlinuz-X ..." runs other kernel images instead.
vmtest: $(BIN) $(WORKLOAD) $(CRASHER) $(INTEG_BIN) $(BENCH_DIR)/bursts
	scripts/vmtest.sh $(OUTPUT)

# Each step says its time as it ends: the suite's budget (README) is kept by
# knowing where it goes.
define timed
	@t0=$$(date +%s); $(MAKE) $(or $(2),$(1)); rc=$$?; \
		echo "make test: $(1) took $$(($$(date +%s) - t0)) s (exit $$rc)"; exit $$rc
endef

test: deps
	$(call timed,build,-j$(NPROC) all test-bins $(FUZZ_DIR)/fuzz_bufile $(FUZZ_DIR)/mkcorpus)
	$(call timed,unit)
	$(call timed,deb)
	$(call timed,integration)
	$(call timed,sanitize)
	$(call timed,valgrind)
	$(call timed,fuzz)
	$(call timed,vmtest)

demo: deps
	$(MAKE) all
	scripts/demo.sh $(abspath $(BIN)) $(abspath $(WORKLOAD))

# ringkeeper(8), written from the binary's own --help (scripts/mkman.sh).
$(MAN): $(BIN) scripts/mkman.sh $(wildcard tests/schema/*.json)
	$(Q)mkdir -p $(dir $@)
	$(call msg,MAN,$@)
	$(Q)scripts/mkman.sh $(BIN) $@ $(RK_VERSION)
man: $(MAN)

# PREFIX=/usr/local by default; DESTDIR for packaging.
# The unit goes where systemd looks for it: /usr/local/lib/systemd/system for
# PREFIX=/usr/local, /usr/lib/systemd/system for PREFIX=/usr.
UNITDIR ?= $(PREFIX)/lib/systemd/system

install: $(BIN) $(MAN)
	install -D -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/sbin/ringkeeper
	install -D -m 0644 $(MAN) $(DESTDIR)$(PREFIX)/share/man/man8/ringkeeper.8
	install -D -m 0644 scripts/ringkeeper.bash-completion \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/ringkeeper
	install -d $(DESTDIR)$(UNITDIR)
	sed 's|@SBINDIR@|$(PREFIX)/sbin|g' scripts/ringkeeper.service.in \
		> $(DESTDIR)$(UNITDIR)/ringkeeper.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/ringkeeper.service

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/sbin/ringkeeper $(DESTDIR)$(PREFIX)/share/man/man8/ringkeeper.8 \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/ringkeeper \
		$(DESTDIR)$(UNITDIR)/ringkeeper.service

# The Debian packages (debian/), built as Debian builds them, into build/deb/ (the
# .changes and .buildinfo too, not into ..); lintian fails the build on an error.
DEB_DIR := build/deb
deb:
	@v=$$(dpkg-parsechangelog -S Version); [ "$$v" = "$(VERSION)" ] || { echo \
		"make deb: debian/changelog says $$v, the Makefile $(VERSION): add a changelog entry (dch -v $(VERSION))"; exit 1; }
	rm -rf $(DEB_DIR) && mkdir -p $(DEB_DIR)
	DEB_BUILD_OPTIONS="parallel=$(NPROC) $(DEB_BUILD_OPTIONS)" \
		dpkg-buildpackage -b -us -uc --changes-file=$(abspath $(DEB_DIR))/ringkeeper.changes \
		--buildinfo-file=$(abspath $(DEB_DIR))/ringkeeper.buildinfo \
		--buildinfo-option=-u$(abspath $(DEB_DIR)) --changes-option=-u$(abspath $(DEB_DIR))
	lintian --fail-on error $(DEB_DIR)/*.deb

FORMATTED := bpf/*.c bpf/*.h user/*.c user/*/*.c user/*/*.h tests/*.c tests/*/*.c

format:
	clang-format -i $(FORMATTED)

check-format:
	clang-format --dry-run -Werror $(FORMATTED)
	python3 scripts/layers.py user

clean:
	rm -rf build build-san build-deb

-include $(wildcard $(OUTPUT)/*/*.d $(OUTPUT)/user/*/*.d $(OUTPUT)/tests/*/*.d)
