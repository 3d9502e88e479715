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
