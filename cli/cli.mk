# SPDX-License-Identifier: Apache-2.0
# cli/ -- mooncakectl, its man page and its bash completion.
CLI_SRCS := $(wildcard cli/*.c)
CLI_OBJS := $(CLI_SRCS:%.c=$(O)/%.o)

# mooncakectl trace runs the BPF loader itself when no tracer runs (lib/trace).
$(O)/bin/mooncakectl: $(CLI_OBJS) $(CLIENT_LIB) $(MCTRACE_LIB)
	$(call msg,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) -o $@ $^ $(ALL_LDFLAGS) $(LIBS_CORE) $(RDMA_LIBS) -ljansson -ldl $(BPF_SYSLIBS)

ifneq ($(CLI_SRCS),)
BINS += $(O)/bin/mooncakectl
endif

# The unit test of the pure helpers links ctl-util.o (no curl, no jansson).
$(O)/tests/unit/test-ctl-util: $(O)/cli/ctl-util.o

# make install: the man page and the completion next to the binary.
BASHCOMPDIR ?= $(DATADIR)/bash-completion/completions
.PHONY: install-ctl
install: install-ctl
install-ctl: $(O)/bin/mooncakectl
	$(INSTALL) -d $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(BASHCOMPDIR)
	$(INSTALL) -m 0644 cli/mooncakectl.1 $(DESTDIR)$(MANDIR)/man1/mooncakectl.1
	$(INSTALL) -m 0644 cli/mooncakectl.bash-completion $(DESTDIR)$(BASHCOMPDIR)/mooncakectl
