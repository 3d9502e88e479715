# SPDX-License-Identifier: Apache-2.0
# daemon/man.mk -- the daemons' man pages, built by `make install` (and
# `make man`):
#
#   $(O)/man/mooncake-{master,node,trace}.8  daemon/<d>/mooncake-<d>.8.in, whose
#                                   @OPTIONS@ line becomes the daemon's --help
#                                   turned into roff (daemon/common/man-options.sh)
#   $(O)/man/mooncake.conf.5        daemon/common/mooncake.conf.5.in, with the
#                                   keys of the three files (@MASTER_KEYS@ ...)
#
# The prose is written by hand in the .in files; the option lists come from
# the option tables, through the built daemons' --help.

MAN_DAEMONS := master node trace
MAN_PAGES   := $(MAN_DAEMONS:%=$(O)/man/mooncake-%.8) $(O)/man/mooncake.conf.5
MAN_OPTS    := daemon/common/man-options.sh
MAN_SED      = sed -e 's|@VERSION@|$(VERSION)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g'

$(O)/man/%.opts: $(O)/bin/mooncake-% $(MAN_OPTS)
	@mkdir -p $(@D)
	$(Q)env -i $< --help | $(MAN_OPTS) flags >$@.tmp && mv $@.tmp $@
$(O)/man/%.keys: $(O)/bin/mooncake-% $(MAN_OPTS)
	@mkdir -p $(@D)
	$(Q)env -i $< --help | $(MAN_OPTS) keys >$@.tmp && mv $@.tmp $@

define MAN8_RULE
$(O)/man/mooncake-$(1).8: daemon/$(1)/mooncake-$(1).8.in $(O)/man/$(1).opts $(O)/.paths
	$$(call msg,MAN,$$@)
	$$(Q)$$(MAN_SED) -e '/^@OPTIONS@$$$$/{r $(O)/man/$(1).opts' -e 'd;}' $$< >$$@
endef
$(foreach d,$(MAN_DAEMONS),$(eval $(call MAN8_RULE,$(d))))

# @MASTER_KEYS@, @NODE_KEYS@, @TRACE_KEYS@
MAN_KEYS_SED = $(foreach d,$(MAN_DAEMONS),-e '/^@$(shell echo $(d) | tr a-z A-Z)_KEYS@$$/{r $(O)/man/$(d).keys' -e 'd;}')
$(O)/man/mooncake.conf.5: daemon/common/mooncake.conf.5.in $(MAN_DAEMONS:%=$(O)/man/%.keys) $(O)/.paths
	$(call msg,MAN,$@)
	$(Q)$(MAN_SED) $(MAN_KEYS_SED) $< >$@

.PHONY: man install-man
man: $(MAN_PAGES)

install: install-man
install-man: $(MAN_PAGES)
	$(INSTALL) -d $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8
	$(INSTALL) -m 0644 $(filter %.8,$(MAN_PAGES)) $(DESTDIR)$(MANDIR)/man8/
	$(INSTALL) -m 0644 $(filter %.5,$(MAN_PAGES)) $(DESTDIR)$(MANDIR)/man5/
