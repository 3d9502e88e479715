# daemon/ -- the master and node daemons.
#
#   $(O)/daemon/libmaster.a   daemon/master/*.c except master.c (linked by tests and bench)
#   $(O)/daemon/libdcommon.a  daemon/common/*.c (config, logging, notify, signals)
#   $(O)/bin/mooncake-master  daemon/master/master.c
#   $(O)/bin/mooncake-node    daemon/node/node.c

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

DAEMON_LIBS := $(DCOMMON_LIB) $(PROTO_LIB) $(UTIL_LIB)
DAEMON_SYSLIBS := $(LIBS_CORE) -linih -lmicrohttpd -lsqlite3 -ljansson

$(O)/bin/mooncake-master: $(O)/$(MASTER_MAIN:.c=.o) $(MASTER_LIB) $(DAEMON_LIBS)
	$(call msg,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) -o $@ $^ $(ALL_LDFLAGS) $(DAEMON_SYSLIBS)

# The node also uses the blocking RPC client (lib/rpc) for its calls to the
# master, and libibverbs for node-rdma.o's device probe.
$(O)/bin/mooncake-node: $(O)/$(NODE_MAIN:.c=.o) $(NODE_LIB) $(RPC_LIB) $(DAEMON_LIBS)
	$(call msg,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) -o $@ $^ $(ALL_LDFLAGS) $(DAEMON_SYSLIBS) -libverbs

BINS += $(MASTER_LIB) $(NODE_LIB) $(DCOMMON_LIB)
ifneq ($(wildcard $(MASTER_MAIN)),)
BINS += $(O)/bin/mooncake-master
endif
ifneq ($(wildcard $(NODE_MAIN)),)
BINS += $(O)/bin/mooncake-node
endif
