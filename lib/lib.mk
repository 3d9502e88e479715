# lib/ -- internal utility archive and the public client library.
#
#   $(O)/lib/libmcutil.a        lib/util/*.c            (internal, static)
#   $(O)/lib/libmcproto.a       lib/proto/*.c           (wire protocol)
#   $(O)/lib/libmctrace.a       lib/trace/*.c           (the BPF loader, with the programs of
#                                                        bpf/ embedded: mooncake-trace and
#                                                        mooncakectl trace; links $(BPF_SYSLIBS))
#   $(O)/lib/libmooncake.so.0   lib/client/*.c + the two above, exports mc_* only

UTIL_SRCS  := $(wildcard lib/util/*.c)
UTIL_OBJS  := $(UTIL_SRCS:%.c=$(O)/%.o)
UTIL_LIB   := $(O)/lib/libmcutil.a

PROTO_SRCS := $(wildcard lib/proto/*.c)
PROTO_OBJS := $(PROTO_SRCS:%.c=$(O)/%.o)
PROTO_LIB  := $(O)/lib/libmcproto.a

MCTRACE_SRCS := $(wildcard lib/trace/*.c)
MCTRACE_OBJS := $(MCTRACE_SRCS:%.c=$(O)/%.o)
MCTRACE_LIB  := $(O)/lib/libmctrace.a

CLIENT_SRCS := $(wildcard lib/client/*.c)
CLIENT_OBJS := $(CLIENT_SRCS:%.c=$(O)/%.o)
CLIENT_LIB  := $(O)/lib/libmooncake.a
CLIENT_SO   := $(O)/lib/libmooncake.so.$(SOVERSION)

$(UTIL_LIB): $(UTIL_OBJS)
$(PROTO_LIB): $(PROTO_OBJS)
$(MCTRACE_LIB): $(MCTRACE_OBJS)
$(CLIENT_LIB): $(CLIENT_OBJS) $(PROTO_OBJS) $(UTIL_OBJS)

$(O)/lib/%.a:
	$(call msg,AR,$@)
	@mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

$(CLIENT_SO): $(CLIENT_OBJS) $(PROTO_OBJS) $(UTIL_OBJS) lib/libmooncake.map
	$(call msg,LD,$@)
	$(Q)$(CC) -shared -Wl,-soname,libmooncake.so.$(SOVERSION) \
		-Wl,--version-script=lib/libmooncake.map -o $@ \
		$(filter %.o,$^) $(ALL_LDFLAGS) $(LIBS_CORE)
	$(Q)ln -sf libmooncake.so.$(SOVERSION) $(O)/lib/libmooncake.so

$(O)/lib/mooncake.pc: lib/mooncake.pc.in Makefile
	$(call msg,GEN,$@)
	@mkdir -p $(@D)
	$(Q)sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
		-e 's|@INCDIR@|$(INCDIR)|' -e 's|@VERSION@|$(VERSION)|' $< > $@

BINS += $(UTIL_LIB) $(PROTO_LIB) $(MCTRACE_LIB) $(CLIENT_LIB) $(CLIENT_SO) $(O)/lib/mooncake.pc
