# SPDX-License-Identifier: Apache-2.0
# packaging/ -- installed data that is not built: the Grafana dashboards and
# their provisioning files, to $(DATADIR)/mooncake/grafana/:
#   dashboards/mooncake-{master,nodes,trace}.json
#   provisioning/dashboards/mooncake.yaml      (Grafana dashboard provider)
#   provisioning/datasources/prometheus.yaml   (example datasource)
# The provider's path is /usr/share/mooncake/grafana/dashboards, i.e.
# PREFIX=/usr as packages use; for another PREFIX it is rewritten here.

GRAFANA_DIR        := packaging/grafana
GRAFANA_DASHBOARDS := $(wildcard $(GRAFANA_DIR)/dashboards/*.json)
GRAFANA_DEST        = $(DESTDIR)$(DATADIR)/mooncake/grafana

.PHONY: install-grafana
install: install-grafana
install-grafana:
	$(INSTALL) -d $(GRAFANA_DEST)/dashboards $(GRAFANA_DEST)/provisioning/dashboards \
		$(GRAFANA_DEST)/provisioning/datasources
	$(INSTALL) -m 0644 $(GRAFANA_DASHBOARDS) $(GRAFANA_DEST)/dashboards/
	sed 's|/usr/share/mooncake/grafana/dashboards|$(DATADIR)/mooncake/grafana/dashboards|' \
		$(GRAFANA_DIR)/provisioning/dashboards/mooncake.yaml \
		>$(GRAFANA_DEST)/provisioning/dashboards/mooncake.yaml
	$(INSTALL) -m 0644 $(GRAFANA_DIR)/provisioning/datasources/prometheus.yaml \
		$(GRAFANA_DEST)/provisioning/datasources/

# ---- packages -------------------------------------------------------------------------
#   make deb            the .debs of packaging/debian, built by dpkg-buildpackage from a
#                       staging copy of the tree (git's files, debian/ at the top) in
#                       $(PKG_STAGE), then checked by lintian (errors and warnings fail);
#                       into $(DEB_OUT).  DEB_VERSION=0.1.0~x builds another version.
#   make rpm            the .rpms of packaging/mooncake.spec (Debian's rpmbuild), then
#                       rpmlint (packaging/rpmlint.toml); into $(RPM_OUT), the
#                       debuginfo ones into $(RPM_OUT)/debug
#   make test-packages  tests/packaging/*.bats (root, mmdebstrap; not part of `make test`)

PKG_STAGE   ?= $(O)/pkg/stage
DEB_OUT     ?= $(O)/deb
DEB_VERSION ?= $(VERSION)
DEB_JOBS    ?= 2
DEB_SRC      = $(PKG_STAGE)/deb/mooncake

# stage_tree DIR: the sources as git sees them (tracked and new files, not
# the ignored build folders) when this is a git checkout's top, or else
# the whole tree but them.
define stage_tree
	$(Q)rm -rf $(1) && mkdir -p $(1)
	$(Q)if [ "$$(git rev-parse --show-toplevel 2>/dev/null)" = "$$(pwd -P)" ]; then \
		git ls-files -z -co --exclude-standard | \
			tar --null -T - --ignore-failed-read -cf - | tar -xf - -C $(1); \
	else tar --exclude='./.output*' --exclude='./run-state' -cf - . | tar -xf - -C $(1); fi
endef

# MAKEFLAGS and O of this make must not reach the package's own build.
PKG_ENV = env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u O

# DEB_REBUILD=1: package the last staged build again, as DEB_VERSION, without
# staging or compiling anew (dpkg-buildpackage --no-pre-clean): the upgrade
# test's second version.
.PHONY: deb rpm lintian test-packages
deb:
	$(Q)packaging/deps.sh pkg
ifneq ($(DEB_REBUILD),1)
	$(call msg,STAGE,$(DEB_SRC))
	$(call stage_tree,$(DEB_SRC))
	$(Q)cp -a $(DEB_SRC)/packaging/debian $(DEB_SRC)/debian
else
	$(Q)[ -d $(DEB_SRC)/debian ] || { echo "deb: DEB_REBUILD=1 packages the last build: make deb first"; exit 1; }
endif
	$(Q)sed -i '1s/(.*)/($(DEB_VERSION))/' $(DEB_SRC)/debian/changelog && rm -f $(DEB_SRC)/debian/files
	$(call msg,DPKG,$(DEB_OUT))
	$(Q)cd $(DEB_SRC) && $(PKG_ENV) DEB_BUILD_OPTIONS="parallel=$(DEB_JOBS) $(DEB_BUILD_OPTIONS)" \
		dpkg-buildpackage --build=binary --no-sign $(if $(filter 1,$(DEB_REBUILD)),--no-pre-clean) \
		$(if $(V),,>../build.log 2>&1) || { tail -n 60 ../build.log; \
		echo "deb: the build failed; whole log: $(PKG_STAGE)/deb/build.log"; exit 1; }
	$(Q)mkdir -p $(DEB_OUT) && rm -f $(DEB_OUT)/*.deb $(DEB_OUT)/*.changes $(DEB_OUT)/*.buildinfo
	$(Q)mv $(PKG_STAGE)/deb/*_$(DEB_VERSION)_*.deb $(PKG_STAGE)/deb/*_$(DEB_VERSION)_*.changes \
		$(PKG_STAGE)/deb/*_$(DEB_VERSION)_*.buildinfo $(DEB_OUT)/
	$(Q)$(MAKE) --no-print-directory lintian DEB_OUT=$(DEB_OUT)
	$(Q)ls -l $(DEB_OUT)/*.deb | awk '{ printf "  %-8s %s (%d KiB)\n", "DEB", $$NF, $$5 / 1024 }'

# Errors and warnings fail; pedantic and info tags are shown.  The
# overrides (packaging/debian/*.lintian-overrides) carry their reasons.
lintian:
	$(call msg,LINTIAN,$(DEB_OUT))
	$(Q)lintian --pedantic --info --fail-on error,warning $(DEB_OUT)/*.changes

RPM_OUT     ?= $(O)/rpm
RPM_VERSION ?= $(subst -,_,$(DEB_VERSION))
RPM_TOP      = $(abspath $(PKG_STAGE)/rpm)
RPM_SRC      = $(RPM_TOP)/mooncake-$(RPM_VERSION)

# rpmbuild on Debian: --nodeps (its rpm database is empty; BuildRequires
# name Fedora's packages, the build uses the Debian ones), and what a
# Fedora-like distribution's configuration does: debuginfo packages (which
# strip the binaries; Fedora's %install hook, redhat-rpm-config) and man
# pages compressed (Debian's brp-compress needs bash, not dash).
RPMBUILD_DEBIAN = --nodeps --define '_enable_debug_packages 1' \
	--define 'install %{?_enable_debug_packages:%{?buildsubdir:%{debug_package}}}%%install' \
	--define '__brp_compress bash /usr/lib/rpm/brp-compress /usr'

rpm:
	$(Q)packaging/deps.sh pkg
	$(call msg,STAGE,$(RPM_SRC))
	$(call stage_tree,$(RPM_SRC))
	$(Q)mkdir -p $(RPM_TOP)/SOURCES && tar -C $(RPM_TOP) -czf \
		$(RPM_TOP)/SOURCES/mooncake-$(RPM_VERSION).tar.gz mooncake-$(RPM_VERSION)
	$(call msg,RPMBUILD,$(RPM_OUT))
	$(Q)$(PKG_ENV) rpmbuild -ba $(RPMBUILD_DEBIAN) --define '_topdir $(RPM_TOP)' \
		--define 'mc_version $(RPM_VERSION)' --define '_smp_mflags -j$(DEB_JOBS)' \
		packaging/mooncake.spec $(if $(V),,>$(RPM_TOP)/build.log 2>&1) || \
		{ tail -n 60 $(RPM_TOP)/build.log; echo "rpm: the build failed; whole log: $(RPM_TOP)/build.log"; exit 1; }
	$(Q)mkdir -p $(RPM_OUT)/debug && rm -f $(RPM_OUT)/*.rpm $(RPM_OUT)/debug/*.rpm
	$(Q)mv $(RPM_TOP)/RPMS/*/*-debug*-$(RPM_VERSION)-*.rpm $(RPM_OUT)/debug/
	$(Q)mv $(RPM_TOP)/RPMS/*/*-$(RPM_VERSION)-*.rpm $(RPM_TOP)/SRPMS/*-$(RPM_VERSION)-*.rpm $(RPM_OUT)/
	$(call msg,RPMLINT,$(RPM_OUT))
	$(Q)rpmlint -c packaging/rpmlint.toml packaging/mooncake.spec $(RPM_OUT)/*.rpm
	$(Q)ls -l $(RPM_OUT)/*.rpm | awk '{ printf "  %-8s %s (%d KiB)\n", "RPM", $$NF, $$5 / 1024 }'

# Root: a fresh Debian 12 root (mmdebstrap), chroots, network namespaces.
test-packages:
	$(Q)packaging/deps.sh pkg
	$(Q)MC_BUILD=$(abspath $(O)) prove --timer --exec 'bats --tap' tests/packaging/*.bats

# make print-VAR: a make variable's value (the tests ask for the install paths).
print-%:
	@echo '$($*)'
