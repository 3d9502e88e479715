# SPDX-License-Identifier: Apache-2.0
# bpf/ -- the BPF programs and their build.
#
#   $(O)/bpf/vmlinux.h          bpftool btf dump of the build host's kernel (not committed)
#   $(O)/bpf/<name>.bpf.o       clang -target bpf, CO-RE, BTF kept (llvm-strip -g)
#   $(O)/gen/mctrace/<name>.skel.h   bpftool gen skeleton: the objects embedded in the
#                               loader, lib/trace/mctrace.c (lib/lib.mk), which
#                               mooncake-trace and mooncakectl link
#
# The map layouts the programs share with the loader: lib/trace/mooncake-trace.h
# (hence -Ilib).

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
# What links the loader links these too.
BPF_SYSLIBS := -lbpf -lelf -lz

$(O)/bpf/vmlinux.h:
	$(call msg,BTF,$@)
	@mkdir -p $(@D)
	$(Q)$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c > $@.tmp && mv $@.tmp $@

$(O)/bpf/%.bpf.o: bpf/%.bpf.c bpf/common.bpf.h lib/trace/mooncake-trace.h lib/util/probes.h $(O)/bpf/vmlinux.h
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@
	$(Q)$(LLVM_STRIP) -g $@

$(O)/gen/mctrace/%.skel.h: $(O)/bpf/%.bpf.o
	$(call msg,GENSKEL,$@)
	@mkdir -p $(@D)
	$(Q)$(BPFTOOL) gen skeleton $< name mc_$* > $@.tmp && mv $@.tmp $@

# The loader includes every skeleton.
$(MCTRACE_OBJS): $(BPF_SKELS)

BINS += $(BPF_OBJS)
