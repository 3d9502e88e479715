# SPDX-License-Identifier: Apache-2.0
# Mooncake Store in C -- one non-recursive build.
#
# Targets:
#   all (default)   build what runs: daemons, mooncakectl, libmooncake (.so, .a), tracer
#   run             install the build packages, build, start a local master + node
#                   (state in ./run-state); MC_RUN_SELFTEST=1: put, get, compare, stop
#   test            install the test packages, build, run the fast suite (unit + integration)
#   test-slow       the long fault runs (kill -9 rounds of the master and the node)
#   test-root       root-only tests: BPF tracer, network namespaces (as root)
#   test-fresh      `make run` and test's install + build on a fresh Debian 12 root (root, mmdebstrap)
#   test-unit       only the cmocka unit tests
#   test-integration only the fast bats integration tests
#   test-python     only the Python binding's pytest group (python/, tests/python)
#   python          build the Python binding into $(O)/python
#   test-deps       apt-get install what the tests need (as root)
#   test-build      build the test binaries and tools (unit, bench, tests/tools)
#   test-tsan       the master's concurrency tests under ThreadSanitizer (in .output-tsan)
#   test-asan       the fast suite under AddressSanitizer + UBSan (in .output-asan)
#   bench           in-process and end-to-end benchmarks (prints figures and ratios)
#   fuzz            build the libFuzzer targets (clang) and run each briefly
#   deps            apt-get install what build, run and test need (as root)
#   install         install to $(DESTDIR)$(PREFIX) (FHS layout)
#   image           the appliance image (root; image/image.mk), image-test and
#                   image-test-cluster boot it under qemu (not part of `make test`)
#   clean           remove the build folder
#   help            this text
#
# Variables:
#   V=1                      show full commands
#   O=DIR                    build folder (default .output)
#   DEVELOPER=1              strict warnings and -Werror
#   SANITIZE=address,undefined  sanitized build (use a separate O=)
#   PREFIX=/usr/local DESTDIR=  install locations
#   CC=, CPPFLAGS=, CFLAGS=, LDFLAGS=  the usual, appended to the project's
#                            (as dpkg-buildflags passes them)

O        ?= .output
# One spelling of the build folder: O=$PWD/.output is O=.output (the flags
# stamp below would otherwise see two builds and rebuild everything).
override O := $(patsubst $(CURDIR)/%,%,$(abspath $(O)))
PREFIX   ?= /usr/local
BINDIR   ?= $(PREFIX)/bin
LIBDIR   ?= $(PREFIX)/lib
INCDIR   ?= $(PREFIX)/include
DATADIR  ?= $(PREFIX)/share
MANDIR   ?= $(DATADIR)/man
SYSCONFDIR ?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)

VERSION_MAJOR := 0
VERSION_MINOR := 1
VERSION_PATCH := 0
VERSION  := $(VERSION_MAJOR).$(VERSION_MINOR).$(VERSION_PATCH)
SOVERSION := 0

CC       ?= cc
ifeq ($(origin CC),default)
CC       := cc
endif
CLANG    ?= clang
PKG_CONFIG ?= pkg-config

ifeq ($(V),1)
Q :=
msg =
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

OPT      ?= -O2 -g
WARN     := -Wall -Wextra -Wshadow -Wno-unused-parameter -Wmissing-prototypes \
            -Wstrict-prototypes -Wpointer-arith -Wformat=2 -Wvla
ifeq ($(DEVELOPER),1)
WARN     += -Werror -Wcast-align -Wwrite-strings -Wundef -Wnull-dereference
endif
ifneq ($(SANITIZE),)
SAN_FLAGS := -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
endif

BASE_CFLAGS := -std=gnu17 $(OPT) $(WARN) -pthread -fPIC -fvisibility=hidden -D_GNU_SOURCE \
               -DMC_VERSION_STRING='"$(VERSION)"' \
               -Iinclude -Ilib -Idaemon -I$(O)/gen $(SAN_FLAGS)
ALL_CFLAGS  = $(BASE_CFLAGS) $(CPPFLAGS) $(CFLAGS)
ALL_LDFLAGS = -pthread $(SAN_FLAGS) $(LDFLAGS)
DEPFLAGS    = -MMD -MP -MF $(@:.o=.d)

# System libraries (Debian 12 packages, see packaging/deps.sh).
LIBS_CORE := -lxxhash -lm -lcrypto
# libibverbs + librdmacm: the RDMA data plane (lib/client/client-rdma.c, daemon/node/node-rdma.c).
RDMA_LIBS := -lrdmacm -libverbs

.DEFAULT_GOAL := all
.DELETE_ON_ERROR:
.SECONDARY:
.PHONY: all run test test-unit test-integration test-slow test-root test-fresh test-deps test-build \
        bench fuzz deps install clean help

# Rebuild everything when the compile flags change: $(O)/.flags is rewritten
# (and so becomes newer than every object) only when its content differs.
FLAGS_NOW = $(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS)
ifneq ($(FLAGS_NOW),$(file <$(O)/.flags))
$(shell mkdir -p $(O))
$(file >$(O)/.flags,$(FLAGS_NOW))
endif

# The commit built, for mooncake_build_info{commit}: $(O)/gen/mc-commit.h is
# rewritten (rebuilding only what includes it) when it changes; "unknown"
# outside a git checkout of this tree (a source tarball).
GIT_COMMIT := $(or $(shell test "$$(git -C $(CURDIR) rev-parse --show-toplevel 2>/dev/null)" = \
	"$(CURDIR)" && git -C $(CURDIR) rev-parse --short=12 HEAD 2>/dev/null),unknown)
COMMIT_H_NOW = \#define MC_GIT_COMMIT "$(GIT_COMMIT)"
ifneq ($(COMMIT_H_NOW),$(file <$(O)/gen/mc-commit.h))
$(shell mkdir -p $(O)/gen)
$(file >$(O)/gen/mc-commit.h,$(COMMIT_H_NOW))
endif

$(O)/%.o: %.c $(O)/.flags
	$(call msg,CC,$<)
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) $(DEPFLAGS) -c -o $@ $<

# BINS: what runs (`make`, `make install`); TEST_BINS: test binaries and
# tools, built only by the test targets (`make test-build`).
BINS :=
TEST_BINS :=

include lib/lib.mk
include daemon/daemon.mk
include cli/cli.mk
include bpf/bpf.mk
include tests/tests.mk
include packaging/packaging.mk
include systemd/systemd.mk
include daemon/man.mk
include image/image.mk
include python/python.mk

all: $(BINS)

test-build: all $(TEST_BINS)

help:
	@sed -n '1,/^$$/p' Makefile | sed 's/^# \{0,1\}//'

deps:
	$(Q)packaging/deps.sh all

clean:
	$(call msg,CLEAN,$(O))
	$(Q)rm -rf $(O)

# The objects' dependency files, under the source directories' mirrors only:
# $(O) also holds whole trees of other kinds (package builds, Debian roots, the
# appliance image's root tree in $(O)/image).
-include $(shell find $(addprefix $(O)/,$(filter-out image,$(patsubst %/,%,$(wildcard */)))) -name '*.d' -type f 2>/dev/null)

# ---- install (FHS; packages are built from this) ------------------------------------
INSTALL ?= install
PUBLIC_HEADERS := $(wildcard include/mooncake/*.h)
install: all
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCDIR)/mooncake
	for b in $(filter $(O)/bin/%,$(BINS)); do $(INSTALL) -m 0755 $$b $(DESTDIR)$(BINDIR)/; done
	$(INSTALL) -m 0755 $(CLIENT_SO) $(DESTDIR)$(LIBDIR)/libmooncake.so.$(VERSION)
	ln -sf libmooncake.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libmooncake.so.$(SOVERSION)
	ln -sf libmooncake.so.$(SOVERSION) $(DESTDIR)$(LIBDIR)/libmooncake.so
	$(INSTALL) -m 0644 $(CLIENT_LIB) $(DESTDIR)$(LIBDIR)/
	$(INSTALL) -m 0644 $(PUBLIC_HEADERS) $(DESTDIR)$(INCDIR)/mooncake/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCDIR@|$(INCDIR)|' \
		-e 's|@VERSION@|$(VERSION)|' lib/mooncake.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/mooncake.pc
