# SPDX-License-Identifier: Apache-2.0
# tests/ -- unit tests (cmocka), integration tests (bats), fuzz targets, benchmarks.
#
#   tests/unit/test-*.c    -> $(O)/tests/unit/test-*     one cmocka group each, TAP under prove
#   tests/integration/*.bats                              run by prove --exec 'bats --tap'
#   tests/bench/bench-*.c  -> $(O)/tests/bench/bench-*   run by `make bench`
#   tests/fuzz/fuzz-*.c    -> $(O)/fuzz/fuzz-*           clang -fsanitize=fuzzer, `make fuzz`

UNIT_SRCS  := $(wildcard tests/unit/test-*.c)
UNIT_BINS  := $(UNIT_SRCS:tests/unit/%.c=$(O)/tests/unit/%)
BENCH_SRCS := $(wildcard tests/bench/bench-*.c)
BENCH_BINS := $(BENCH_SRCS:tests/bench/%.c=$(O)/tests/bench/%)
FUZZ_SRCS  := $(wildcard tests/fuzz/fuzz-*.c)
FUZZ_BINS  := $(FUZZ_SRCS:tests/fuzz/%.c=$(O)/fuzz/%)

TEST_LINK := $(MASTER_LIB) $(NODE_LIB) $(CLIENT_LIB) $(DCOMMON_LIB) $(SEGSRV_LIB) $(RPC_LIB) $(PROTO_LIB) $(UTIL_LIB)

$(O)/tests/unit/%: $(O)/tests/unit/%.o $(TEST_LINK)
	$(call msg,LD,$@)
	$(Q)$(CC) -o $@ $^ $(ALL_LDFLAGS) $(LIBS_CORE) $(RDMA_LIBS) -linih -lmicrohttpd -lsqlite3 -ljansson -lcurl $(DISK_SYSLIBS) -lcmocka

$(O)/tests/bench/%: $(O)/tests/bench/%.o $(TEST_LINK)
	$(call msg,LD,$@)
	$(Q)$(CC) -o $@ $^ $(ALL_LDFLAGS) $(LIBS_CORE) $(RDMA_LIBS) -linih -lmicrohttpd -lsqlite3 -ljansson -lcurl $(DISK_SYSLIBS)

# Fuzz targets compile the sources they exercise themselves, with clang.
FUZZ_CFLAGS = -std=gnu17 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
              -D_GNU_SOURCE -DMC_VERSION_STRING='"$(VERSION)"' -Iinclude -Ilib -Idaemon -I$(O)/gen
# FUZZ_EXTRA_<target>: more sources a target needs (prerequisites too).
# (oplog.c dispatches to every backend: the etcd one comes along)
FUZZ_OPLOG_SRCS := $(wildcard daemon/master/oplog*.c) daemon/master/etcd.c daemon/master/etcd-txn.c
FUZZ_EXTRA_fuzz-oplog := $(FUZZ_OPLOG_SRCS) -ljansson -lcurl
FUZZ_EXTRA_fuzz-oplog-etcd := $(FUZZ_OPLOG_SRCS) -ljansson -lcurl
$(O)/fuzz/fuzz-oplog $(O)/fuzz/fuzz-oplog-etcd: $(FUZZ_OPLOG_SRCS) $(wildcard daemon/master/oplog*.h daemon/master/etcd*.h)
FUZZ_EXTRA_fuzz-etcd-txn := daemon/master/etcd-txn.c
$(O)/fuzz/fuzz-etcd-txn: daemon/master/etcd-txn.c daemon/master/etcd-txn.h
FUZZ_EXTRA_fuzz-records := $(wildcard daemon/master/meta*.c) $(addprefix daemon/master/,\
	record.c segment.c objtab.c pinidx.c group.c oplog.c mdkv.c fsroot.c)
$(O)/fuzz/fuzz-records: $(FUZZ_EXTRA_fuzz-records) $(wildcard daemon/master/*.h)
# fuzz-rest and fuzz-snapshot: the master's code (all but its main) and the
# daemon skeleton's, with the system libraries the master links.
FUZZ_MASTER_SRCS := $(MASTER_SRCS) $(DCOMMON_SRCS) $(RPC_SRCS)
FUZZ_MASTER_LIBS := -linih -lmicrohttpd -lsqlite3 -ljansson -lcurl
FUZZ_EXTRA_fuzz-rest := $(FUZZ_MASTER_SRCS) $(FUZZ_MASTER_LIBS)
FUZZ_EXTRA_fuzz-snapshot := $(FUZZ_MASTER_SRCS) $(FUZZ_MASTER_LIBS)
$(O)/fuzz/fuzz-rest $(O)/fuzz/fuzz-snapshot: $(FUZZ_MASTER_SRCS) $(wildcard daemon/master/*.h daemon/common/*.h lib/rpc/*.h)
FUZZ_EXTRA_fuzz-grant := lib/segsrv/node-grant.c
$(O)/fuzz/fuzz-grant: $(FUZZ_EXTRA_fuzz-grant) $(wildcard lib/segsrv/node-grant.h lib/segsrv/node-segment.h)
FUZZ_EXTRA_fuzz-handshake := lib/rpc/rpc-admit.c lib/rpc/tokens.c
$(O)/fuzz/fuzz-handshake: $(FUZZ_EXTRA_fuzz-handshake) $(wildcard lib/rpc/*.h)
# The disk tier's decoders: the node's disk*.c, with liburing and ISA-L.
FUZZ_DISK_SRCS := $(wildcard daemon/node/disk*.c)
FUZZ_EXTRA_fuzz-disk-offset := $(FUZZ_DISK_SRCS) $(DISK_SYSLIBS)
FUZZ_EXTRA_fuzz-disk-bucket := $(FUZZ_DISK_SRCS) $(DISK_SYSLIBS)
$(O)/fuzz/fuzz-disk-offset $(O)/fuzz/fuzz-disk-bucket: $(FUZZ_DISK_SRCS) $(wildcard daemon/node/disk*.h)
$(O)/fuzz/%: tests/fuzz/%.c $(UTIL_SRCS) $(PROTO_SRCS) $(wildcard lib/util/*.h lib/proto/*.h lib/proto/*.def)
	$(call msg,FUZZ,$@)
	@mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -o $@ $< $(UTIL_SRCS) $(PROTO_SRCS) $(FUZZ_EXTRA_$*) $(LIBS_CORE)

TEST_BINS += $(UNIT_BINS) $(BENCH_BINS)

# The suite, in groups (tests/run.sh prints each group's time and the closing
# "N passed, N failed"): `make test` is the fast default, unit + integration;
# bats tests tagged slow or root run in test-slow and test-root.
test-deps:
	$(Q)packaging/deps.sh test

test-unit: $(UNIT_BINS)
	$(Q)O=$(O) tests/run.sh unit

test-integration: test-build
	$(Q)O=$(O) tests/run.sh integration

test: test-deps
	$(Q)$(MAKE) --no-print-directory test-build
	$(Q)O=$(O) tests/run.sh unit integration python

# test-slow: 100 master and 25 node kill -9 rounds (ROUNDS=, NODE_ROUNDS=);
# the bats files alone run 20 and 5.
test-slow: test-build
	$(Q)MC_RESTART_ROUNDS=$${ROUNDS:-100} MC_NODE_RESTART_ROUNDS=$${NODE_ROUNDS:-25} O=$(O) tests/run.sh slow

test-root: test-build
	$(Q)O=$(O) tests/run.sh root

test-fresh:
	$(Q)packaging/deps.sh fresh
	$(Q)O=$(O) tests/fresh-root.sh

bench: $(BENCH_BINS)
	$(Q)packaging/deps.sh bench
	$(Q)O=$(O) tests/bench/run.sh

# The master's concurrency tests under ThreadSanitizer, in their own build.
# detect_deadlocks=0: mc_meta_check() holds all 1024 shard locks at once,
# more than TSan's deadlock detector can track (64); it is not a finding.
TSAN_O     ?= .output-tsan
TSAN_TESTS := test-fsroot test-node-segment-huge test-tracebuf test-meta-stress test-meta-upsert test-meta-evict-stress test-meta-evict-yield test-meta-offload test-offalloc test-offalloc-random test-oplog-stress test-oplog-etcd test-rpc-server test-grant test-rpc-admit \
              test-meta-tenants test-log test-rpc-durable test-rpc-conn \
              test-metrics test-disk test-client-xfer test-client-cache test-client-failover test-node-stage test-node-end test-node-data test-node-data-grant
.PHONY: test-tsan
test-tsan:
	$(Q)$(MAKE) --no-print-directory O=$(TSAN_O) SANITIZE=thread \
		$(TSAN_TESTS:%=$(TSAN_O)/tests/unit/%)
	$(Q)fail=0; for t in $(TSAN_TESTS); do echo "  TSAN  $$t"; \
		TSAN_OPTIONS="detect_deadlocks=0 halt_on_error=1 exitcode=66 $$TSAN_OPTIONS" \
		$(TSAN_O)/tests/unit/$$t >$(TSAN_O)/tests/unit/$$t.tsan.log 2>&1 || \
		{ fail=1; tail -n 60 $(TSAN_O)/tests/unit/$$t.tsan.log; }; done; exit $$fail

# Everything `make test` builds, with DEVELOPER=1's strict warnings as
# errors (-Werror, -Wnull-dereference...), in its own build: the variant the
# README offers stays buildable.
WERROR_O ?= .output-werror
.PHONY: test-werror
test-werror:
	$(Q)$(MAKE) --no-print-directory O=$(WERROR_O) DEVELOPER=1 test-build

# The fast suite (unit + integration) under AddressSanitizer and UBSan, in
# its own build; a sanitizer report fails the test that got it (the unit
# tests abort, stop_all reads the daemons' logs).
ASAN_O ?= .output-asan
.PHONY: test-asan
test-asan:
	$(Q)$(MAKE) --no-print-directory O=$(ASAN_O) SANITIZE=address,undefined test-build
	$(Q)O=$(ASAN_O) MC_BUILD=$(CURDIR)/$(ASAN_O) tests/run.sh unit integration

fuzz: $(FUZZ_BINS)
	$(Q)for f in $(FUZZ_BINS); do echo "  FUZZ $$f"; \
		mkdir -p $(O)/fuzz/corpus-$$(basename $$f); \
		mkdir -p $(O)/fuzz/artifacts-$$(basename $$f); \
		$$f -max_total_time=$${FUZZ_SECONDS:-20} -max_len=65536 \
		    -artifact_prefix=$(O)/fuzz/artifacts-$$(basename $$f)/ \
		    $(O)/fuzz/corpus-$$(basename $$f) tests/fuzz/corpus/$$(basename $$f) \
		    > $(O)/fuzz/$$(basename $$f).log 2>&1 || { tail -n 40 $(O)/fuzz/$$(basename $$f).log; exit 1; }; \
		tail -n 2 $(O)/fuzz/$$(basename $$f).log; done

run:
	$(Q)packaging/deps.sh run
	$(Q)$(MAKE) --no-print-directory all
	$(Q)O=$(O) tests/run-cluster.sh

# tests/tools/*.c -> $(O)/tests/tools/*   small protocol clients used by the integration tests
TOOL_SRCS := $(wildcard tests/tools/*.c)
TOOL_BINS := $(TOOL_SRCS:tests/tools/%.c=$(O)/tests/tools/%)

$(O)/tests/tools/%: $(O)/tests/tools/%.o $(PROTO_LIB) $(UTIL_LIB)
	$(call msg,LD,$@)
	$(Q)$(CC) -o $@ $^ $(ALL_LDFLAGS) $(LIBS_CORE) $(RDMA_LIBS)

TEST_BINS += $(TOOL_BINS)

# End-to-end benchmark client (libmooncake's public API only) and its driver.
$(O)/tests/bench/client-bench: $(O)/tests/bench/client-bench.o $(CLIENT_LIB)
	$(call msg,LD,$@)
	$(Q)$(CC) -o $@ $^ $(ALL_LDFLAGS) $(LIBS_CORE) $(RDMA_LIBS)
TEST_BINS += $(O)/tests/bench/client-bench
bench: $(O)/tests/bench/client-bench all

# Load generators of the restart and eviction tests (libmooncake, plus util for mc_rand).
$(O)/tests/tools/mc-load $(O)/tests/tools/mc-churn $(O)/tests/tools/mc-batch: $(O)/tests/tools/%: $(O)/tests/tools/%.o $(CLIENT_LIB) $(UTIL_LIB)
	$(call msg,LD,$@)
	$(Q)$(CC) -o $@ $^ $(ALL_LDFLAGS) $(LIBS_CORE) $(RDMA_LIBS)
