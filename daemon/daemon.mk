# SPDX-License-Identifier: Apache-2.0
# daemon/ -- the master, node and tracer daemons.
#
#   $(O)/daemon/libmaster.a   daemon/master/*.c except master.c (linked by tests and bench)
#   $(O)/daemon/libdcommon.a  daemon/common/*.c (the skeleton: options, logging, notify,
#                             signals, the metrics lifecycle; the RPC and HTTP servers)
#   $(O)/bin/mooncake-master  daemon/master/master.c
#   $(O)/bin/mooncake-node    daemon/node/node.c
#   $(O)/bin/mooncake-trace   daemon/trace/*.c, the BPF loader (lib/trace)

MASTER_MAIN := daemon/master/master.c
MASTER_SRCS := $(filter-out $(MASTER_MAIN),$(wildcard daemon/master/*.c))
MASTER_OBJS := $(MASTER_SRCS:%.c=$(O)/%.o)
MASTER_LIB  := $(O)/daemon/libmaster.a

NODE_MAIN   := daemon/node/node.c
NODE_SRCS   := $(filter-out $(NODE_MAIN),$(wildcard daemon/node/*.c))
NODE_OBJS   := $(NODE_SRCS:%.c=$(O)/%.o)
NODE_LIB    := $(O)/daemon/libnode.a

DCOMMON_SRCS := $(wildcard daemon/common/*.c)
DCOMMON_OBJS := $(DCOMMON_SRCS:%.c=$(O)/%.o)
DCOMMON_LIB  := $(O)/daemon/libdcommon.a

$(MASTER_LIB): $(MASTER_OBJS)
$(NODE_LIB): $(NODE_OBJS)
$(DCOMMON_LIB): $(DCOMMON_OBJS)

$(O)/daemon/%.a:
	$(call msg,AR,$@)
	@mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

# The default config files are SYSCONFDIR/mooncake/<daemon>.conf, compiled into
# the daemons' mains (-DMC_SYSCONFDIR, common/daemon.h); they are rebuilt when
# SYSCONFDIR changes ($(O)/.sysconfdir holds the value they were built with).
ifneq ($(SYSCONFDIR),$(file <$(O)/.sysconfdir))
$(shell mkdir -p $(O))
$(file >$(O)/.sysconfdir,$(SYSCONFDIR))
endif
DAEMON_MAIN_OBJS := $(O)/$(MASTER_MAIN:.c=.o) $(O)/$(NODE_MAIN:.c=.o) $(O)/daemon/trace/trace.o
$(DAEMON_MAIN_OBJS): BASE_CFLAGS += -DMC_SYSCONFDIR='"$(SYSCONFDIR)"'
$(DAEMON_MAIN_OBJS): $(O)/.sysconfdir

DAEMON_LIBS := $(DCOMMON_LIB) $(RPC_LIB) $(PROTO_LIB) $(UTIL_LIB)
DAEMON_SYSLIBS := $(LIBS_CORE) -linih -lmicrohttpd -lsqlite3 -ljansson -lcurl
# The node's disk tier (daemon/node/disk*.c): io_uring and ISA-L's CRC32C.
DISK_SYSLIBS := -luring -lisal

$(O)/bin/mooncake-master: $(O)/$(MASTER_MAIN:.c=.o) $(MASTER_LIB) $(DAEMON_LIBS)
	$(call msg,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) -o $@ $^ $(ALL_LDFLAGS) $(DAEMON_SYSLIBS)

# The node serves its segments with lib/segsrv (shared with the client
# library), and uses libibverbs + librdmacm for node-rdma.o.
$(O)/bin/mooncake-node: $(O)/$(NODE_MAIN:.c=.o) $(NODE_LIB) $(SEGSRV_LIB) $(DAEMON_LIBS)
	$(call msg,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) -o $@ $^ $(ALL_LDFLAGS) $(DAEMON_SYSLIBS) $(DISK_SYSLIBS) $(RDMA_LIBS)

TRACE_SRCS := $(wildcard daemon/trace/*.c)
TRACE_OBJS := $(TRACE_SRCS:%.c=$(O)/%.o)

$(O)/bin/mooncake-trace: $(TRACE_OBJS) $(MCTRACE_LIB) $(DAEMON_LIBS)
	$(call msg,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) -o $@ $^ $(ALL_LDFLAGS) $(DAEMON_SYSLIBS) $(BPF_SYSLIBS)

# The config parser takes outside bytes: tests/fuzz/fuzz-config.c.
FUZZ_CONFIG_SRCS := daemon/common/config.c daemon/common/config-print.c
FUZZ_EXTRA_fuzz-config := $(FUZZ_CONFIG_SRCS) -linih
$(O)/fuzz/fuzz-config: $(FUZZ_CONFIG_SRCS) $(wildcard daemon/common/config*.h)

BINS += $(MASTER_LIB) $(NODE_LIB) $(DCOMMON_LIB) $(O)/bin/mooncake-trace
ifneq ($(wildcard $(MASTER_MAIN)),)
BINS += $(O)/bin/mooncake-master
endif
ifneq ($(wildcard $(NODE_MAIN)),)
BINS += $(O)/bin/mooncake-node
endif
