# cli/ -- mooncakectl.
CLI_SRCS := $(wildcard cli/*.c)
CLI_OBJS := $(CLI_SRCS:%.c=$(O)/%.o)

$(O)/bin/mooncakectl: $(CLI_OBJS) $(CLIENT_LIB)
	$(call msg,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) -o $@ $^ $(ALL_LDFLAGS) $(LIBS_CORE) -ljansson

ifneq ($(CLI_SRCS),)
BINS += $(O)/bin/mooncakectl
endif
