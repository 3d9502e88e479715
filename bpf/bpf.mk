# bpf/ -- BPF programs, their skeletons, the loader, and mooncake-trace.
#
#   $(O)/bpf/vmlinux.h          bpftool btf dump of the build host's kernel (not committed)
#   $(O)/bpf/<name>.bpf.o       clang -target bpf, CO-RE, BTF kept (llvm-strip -g)
#   $(O)/gen/mctrace/<name>.skel.h   bpftool gen skeleton (objects embedded in the loader)
#   $(O)/bpf/libmctrace.a       bpf/mctrace.c: open, load, pin, attach, read the maps
#   $(O)/bin/mooncake-trace     daemon/trace/*.c
#
# mooncakectl links the loader too (mooncakectl trace attaches itself when
# no tracer has pinned the maps).

BPF_SRCS   := $(wildcard bpf/*.bpf.c)
BPF_OBJS   := $(BPF_SRCS:bpf/%.bpf.c=$(O)/bpf/%.bpf.o)
BPF_SKELS  := $(BPF_SRCS:bpf/%.bpf.c=$(O)/gen/mctrace/%.skel.h)
BPF_ARCH   := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/' -e 's/ppc64le/powerpc/')
BPF_MULTIARCH := $(shell dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || $(CC) -print-multiarch)
BPFTOOL    ?= bpftool
LLVM_STRIP ?= llvm-strip
VMLINUX_BTF ?= /sys/kernel/btf/vmlinux
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(BPF_ARCH) -Wall -Werror \
              -I$(O)/bpf -Ibpf -Ilib -idirafter /usr/include/$(BPF_MULTIARCH)

$(O)/bpf/vmlinux.h:
	$(call msg,BTF,$@)
	@mkdir -p $(@D)
	$(Q)$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c > $@.tmp && mv $@.tmp $@

$(O)/bpf/%.bpf.o: bpf/%.bpf.c bpf/common.bpf.h bpf/mooncake-trace.h lib/util/probes.h $(O)/bpf/vmlinux.h
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@
	$(Q)$(LLVM_STRIP) -g $@

$(O)/gen/mctrace/%.skel.h: $(O)/bpf/%.bpf.o
	$(call msg,GENSKEL,$@)
	@mkdir -p $(@D)
	$(Q)$(BPFTOOL) gen skeleton $< name mc_$* > $@.tmp && mv $@.tmp $@

TRACE_SRCS := $(wildcard daemon/trace/*.c)
TRACE_OBJS := $(TRACE_SRCS:%.c=$(O)/%.o)
MCTRACE_SRCS := bpf/mctrace.c
MCTRACE_OBJS := $(MCTRACE_SRCS:%.c=$(O)/%.o)
MCTRACE_LIB  := $(O)/bpf/libmctrace.a
BPF_SYSLIBS  := -lbpf -lelf -lz

# "bpf/mctrace.h" from the top of the tree (no bpf/libbpf.h lives there).
$(MCTRACE_OBJS) $(TRACE_OBJS) $(O)/cli/ctl-trace.o: BASE_CFLAGS += -I.
$(MCTRACE_OBJS): $(BPF_SKELS)
$(MCTRACE_LIB): $(MCTRACE_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(O)/bin/mooncake-trace: $(TRACE_OBJS) $(MCTRACE_LIB) $(DAEMON_LIBS)
	$(call msg,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) -o $@ $^ $(ALL_LDFLAGS) $(DAEMON_SYSLIBS) $(BPF_SYSLIBS)

# mooncakectl trace: cli/ctl-trace.c uses the loader.
$(O)/cli/ctl-trace.o: $(BPF_SKELS)
$(O)/bin/mooncakectl: $(MCTRACE_LIB)
$(O)/bin/mooncakectl: LIBS_CORE += $(BPF_SYSLIBS)

BINS += $(BPF_OBJS) $(MCTRACE_LIB) $(O)/bin/mooncake-trace
