# SPDX-License-Identifier: Apache-2.0
# lib/ -- internal archives and the public client library.
#
#   $(O)/lib/libmcutil.a        lib/util/*.c            (internal, static)
#   $(O)/lib/libmcproto.a       lib/proto/*.c           (wire protocol: frames, codecs)
#   $(O)/lib/libmcrpc.a         lib/rpc/*.c             (the blocking RPC connection; the
#                                                        epoll RPC server, its admission)
#   $(O)/lib/libmcsegsrv.a      lib/segsrv/*.c          (serving memory segments: the node's
#                                                        data plane, grants, master link; the
#                                                        client's contributed segment)
#   $(O)/lib/libmctrace.a       lib/trace/*.c           (the BPF loader, with the programs of
#                                                        bpf/ embedded: mooncake-trace and
#                                                        mooncakectl trace; links $(BPF_SYSLIBS))
#   $(O)/lib/libmooncake.so.0   lib/client/*.c, rpc, segsrv, proto and the few util objects
#   $(O)/lib/libmooncake.a      they use (CLIENT_UTIL); exports the MC_API functions

UTIL_SRCS  := $(wildcard lib/util/*.c)
UTIL_OBJS  := $(UTIL_SRCS:%.c=$(O)/%.o)
UTIL_LIB   := $(O)/lib/libmcutil.a

PROTO_SRCS := $(wildcard lib/proto/*.c)
PROTO_OBJS := $(PROTO_SRCS:%.c=$(O)/%.o)
PROTO_LIB  := $(O)/lib/libmcproto.a

RPC_SRCS   := $(wildcard lib/rpc/*.c)
RPC_OBJS   := $(RPC_SRCS:%.c=$(O)/%.o)
RPC_LIB    := $(O)/lib/libmcrpc.a

SEGSRV_SRCS := $(wildcard lib/segsrv/*.c)
SEGSRV_OBJS := $(SEGSRV_SRCS:%.c=$(O)/%.o)
SEGSRV_LIB  := $(O)/lib/libmcsegsrv.a

MCTRACE_SRCS := $(wildcard lib/trace/*.c)
MCTRACE_OBJS := $(MCTRACE_SRCS:%.c=$(O)/%.o)
MCTRACE_LIB  := $(O)/lib/libmctrace.a

CLIENT_SRCS := $(wildcard lib/client/*.c)
CLIENT_OBJS := $(CLIENT_SRCS:%.c=$(O)/%.o)
CLIENT_LIB  := $(O)/lib/libmooncake.a
CLIENT_SO   := $(O)/lib/libmooncake.so.$(SOVERSION)
# Of lib/util, only what the client calls and the public API (error and
# type names, version): not the daemons' metrics, allocator or hash map.
# The shared library is linked with -z defs, so a missing one fails the build.
CLIENT_UTIL := error sock types version rdma-plan rdma-keys grant metrics rand logfn tracebuf xfertrace \
               copy-hash gather
CLIENT_ALL_OBJS := $(CLIENT_OBJS) $(SEGSRV_OBJS) $(RPC_OBJS) $(PROTO_OBJS) \
                   $(CLIENT_UTIL:%=$(O)/lib/util/%.o)

$(UTIL_LIB): $(UTIL_OBJS)
$(PROTO_LIB): $(PROTO_OBJS)
$(RPC_LIB): $(RPC_OBJS)
$(SEGSRV_LIB): $(SEGSRV_OBJS)
$(MCTRACE_LIB): $(MCTRACE_OBJS)
$(CLIENT_LIB): $(CLIENT_ALL_OBJS)

$(O)/lib/%.a:
	$(call msg,AR,$@)
	@mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

$(CLIENT_SO): $(CLIENT_ALL_OBJS) lib/libmooncake.map
	$(call msg,LD,$@)
	$(Q)$(CC) -shared -Wl,-soname,libmooncake.so.$(SOVERSION) -Wl,-z,defs \
		-Wl,--version-script=lib/libmooncake.map -o $@ \
		$(filter %.o,$^) $(ALL_LDFLAGS) $(LIBS_CORE) $(RDMA_LIBS)
	$(Q)ln -sf libmooncake.so.$(SOVERSION) $(O)/lib/libmooncake.so

$(O)/lib/mooncake.pc: lib/mooncake.pc.in Makefile
	$(call msg,GEN,$@)
	@mkdir -p $(@D)
	$(Q)sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
		-e 's|@INCDIR@|$(INCDIR)|' -e 's|@VERSION@|$(VERSION)|' $< > $@

BINS += $(UTIL_LIB) $(PROTO_LIB) $(RPC_LIB) $(SEGSRV_LIB) $(MCTRACE_LIB) $(CLIENT_LIB) $(CLIENT_SO) $(O)/lib/mooncake.pc
