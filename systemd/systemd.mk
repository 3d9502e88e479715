# SPDX-License-Identifier: Apache-2.0
# systemd/ -- the units, sysusers.d and tmpfiles.d files, and the daemons'
# configuration files.  Built by `make install` (not by `all`):
#
#   $(O)/systemd/mooncake-{master,node,trace}.service  from systemd/*.service.in
#                                   (@BINDIR@, @SYSCONFDIR@ substituted)
#   $(O)/etc/mooncake/{master,node,trace}.conf  each daemon's own
#                                   --print-config --config=/dev/null: every
#                                   option of its table, commented, with its
#                                   default, so the files cannot drift from --help
#
# Installed to $(UNITDIR), $(SYSUSERSDIR), $(TMPFILESDIR) and
# $(SYSCONFDIR)/mooncake.  The sysusers file goes in once per daemon that
# runs as `mooncake` (mooncake-master.conf, mooncake-node.conf) so that each
# package split along the daemons creates the user on its own.  A config
# file already in place is kept (make install on a configured host).

UNITDIR     ?= $(PREFIX)/lib/systemd/system
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
TMPFILESDIR ?= $(PREFIX)/lib/tmpfiles.d

DAEMONS        := master node trace
SYSTEMD_UNITS  := $(DAEMONS:%=$(O)/systemd/mooncake-%.service)
DAEMON_CONFS   := $(DAEMONS:%=$(O)/etc/mooncake/%.conf)

# Regenerate what embeds a path or the version when they change (like
# $(O)/.flags for the objects): $(O)/.paths is rewritten only on a change.
PATHS_NOW = $(VERSION) $(BINDIR) $(SYSCONFDIR)
ifneq ($(PATHS_NOW),$(file <$(O)/.paths))
$(shell mkdir -p $(O))
$(file >$(O)/.paths,$(PATHS_NOW))
endif

$(O)/systemd/%.service: systemd/%.service.in $(O)/.paths
	$(call msg,GEN,$@)
	@mkdir -p $(@D)
	$(Q)sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' $< >$@

# env -i: no MOONCAKE_* variable of the builder's may leak into the file.
$(O)/etc/mooncake/%.conf: $(O)/bin/mooncake-%
	$(call msg,GEN,$@)
	@mkdir -p $(@D)
	$(Q)env -i $< --print-config --config=/dev/null >$@.tmp && mv $@.tmp $@

.PHONY: systemd install-systemd
systemd: $(SYSTEMD_UNITS) $(DAEMON_CONFS)

install: install-systemd
install-systemd: $(SYSTEMD_UNITS) $(DAEMON_CONFS)
	$(INSTALL) -d $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSUSERSDIR) $(DESTDIR)$(TMPFILESDIR) \
		$(DESTDIR)$(SYSCONFDIR)/mooncake
	$(INSTALL) -m 0644 $(SYSTEMD_UNITS) $(DESTDIR)$(UNITDIR)/
	for d in master node; do \
		$(INSTALL) -m 0644 systemd/mooncake.sysusers $(DESTDIR)$(SYSUSERSDIR)/mooncake-$$d.conf && \
		$(INSTALL) -m 0644 systemd/mooncake-$$d.tmpfiles $(DESTDIR)$(TMPFILESDIR)/mooncake-$$d.conf \
		|| exit 1; done
	for c in $(DAEMON_CONFS); do t=$(DESTDIR)$(SYSCONFDIR)/mooncake/$${c##*/}; \
		if [ -e "$$t" ]; then echo "install: keeping $$t (the defaults are in $$c)"; \
		else $(INSTALL) -m 0644 "$$c" "$$t" || exit 1; fi; done
