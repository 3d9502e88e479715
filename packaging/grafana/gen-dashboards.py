#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""packaging/grafana/gen-dashboards.py -- writes dashboards/mooncake-*.json.

The JSON files are the product (Grafana loads them through
provisioning/dashboards/mooncake.yaml); this script is how they are made:
edit the panel lists below and run it (python3, no module outside the
standard library), then `tests/tools/check-dashboards.sh
packaging/grafana/dashboards/*.json`.

Every expression may use only the metrics of docs/metrics.md (master,
node) and docs/metrics-trace.md (tracer); tests/integration/540-dashboards.bats
checks that, and evaluates every expression against a real Prometheus.

Conventions: the datasource is the variable ${DS_PROMETHEUS} (type
datasource, so a provisioned Prometheus is picked by default and an
imported dashboard asks for one); $instance selects the scraped daemons
(multi-value, "All" = .*); rates use $__rate_interval.
"""
import json
import os
import sys

DS = {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}


class Board:
    def __init__(self, uid, title, description, instance_metric):
        self.uid, self.title, self.description = uid, title, description
        self.instance_metric = instance_metric
        self.panels = []
        self.next_id = 1
        self.x = self.y = 0
        self.row_h = 0

    def _place(self, w, h):
        if self.x + w > 24:
            self.x = 0
            self.y += self.row_h
            self.row_h = 0
        pos = {"h": h, "w": w, "x": self.x, "y": self.y}
        self.x += w
        self.row_h = max(self.row_h, h)
        return pos

    def _id(self):
        i = self.next_id
        self.next_id += 1
        return i

    def row(self, title):
        if self.x:
            self.x = 0
            self.y += self.row_h
            self.row_h = 0
        self.panels.append({"id": self._id(), "type": "row", "title": title, "collapsed": False,
                            "gridPos": {"h": 1, "w": 24, "x": 0, "y": self.y}, "panels": []})
        self.y += 1

    def panel(self, kind, title, targets, unit="short", w=12, h=8, desc="", extra=None,
              fmt=None, decimals=None, thresholds=None, minv=None, maxv=None):
        tg = []
        for n, t in enumerate(targets):
            expr, legend = t if isinstance(t, tuple) else (t, "")
            d = {"refId": chr(ord("A") + n), "datasource": DS, "expr": expr,
                 "legendFormat": legend or "__auto", "range": kind != "stat" and kind != "gauge",
                 "instant": kind in ("stat", "gauge")}
            if fmt:
                d["format"] = fmt
            tg.append(d)
        defaults = {"unit": unit}
        if decimals is not None:
            defaults["decimals"] = decimals
        if minv is not None:
            defaults["min"] = minv
        if maxv is not None:
            defaults["max"] = maxv
        if thresholds:
            defaults["thresholds"] = {"mode": "absolute", "steps": thresholds}
        if kind == "timeseries":
            defaults["custom"] = {"drawStyle": "line", "lineWidth": 1, "fillOpacity": 10,
                                  "showPoints": "never", "spanNulls": False}
        p = {"id": self._id(), "type": kind, "title": title, "description": desc,
             "datasource": DS, "gridPos": self._place(w, h), "targets": tg,
             "fieldConfig": {"defaults": defaults, "overrides": []}}
        if kind == "timeseries":
            p["options"] = {"legend": {"displayMode": "list", "placement": "bottom",
                                       "showLegend": True},
                            "tooltip": {"mode": "multi", "sort": "desc"}}
        elif kind in ("stat", "gauge"):
            p["options"] = {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "",
                                              "values": False},
                            "colorMode": "value", "graphMode": "area", "textMode": "auto"}
        if extra:
            p.update(extra)
        self.panels.append(p)

    def ts(self, title, targets, unit="short", **kw):
        self.panel("timeseries", title, targets, unit, **kw)

    def stat(self, title, expr, unit="short", w=4, h=4, **kw):
        self.panel("stat", title, [expr], unit, w=w, h=h, **kw)

    def gauge(self, title, expr, unit="percentunit", w=4, h=4, **kw):
        self.panel("gauge", title, [expr], unit, w=w, h=h, minv=0, maxv=1, **kw)

    def heatmap(self, title, expr, desc="", w=12, h=8):
        self.panel("heatmap", title, [(expr, "{{le}}")], "s", w=w, h=h, desc=desc, fmt="heatmap",
                   extra={"dataFormat": "tsbuckets",
                          "options": {"calculate": False, "yAxis": {"unit": "s"},
                                      "cellGap": 1, "color": {"mode": "scheme",
                                                              "scheme": "Oranges",
                                                              "exponent": 0.5},
                                      "tooltip": {"show": True, "yHistogram": True}}})

    def json(self):
        inst = {"name": "instance", "label": "Instance", "type": "query", "datasource": DS,
                "definition": "label_values(%s, instance)" % self.instance_metric,
                "query": "label_values(%s, instance)" % self.instance_metric,
                "refresh": 2, "includeAll": True, "multi": True, "allValue": ".*",
                "current": {"selected": True, "text": ["All"], "value": ["$__all"]},
                "sort": 1, "hide": 0, "regex": "", "options": []}
        ds = {"name": "DS_PROMETHEUS", "label": "Data source", "type": "datasource",
              "query": "prometheus", "current": {}, "hide": 0, "refresh": 1, "regex": "",
              "options": [], "includeAll": False, "multi": False}
        return {
            "uid": self.uid, "title": self.title, "description": self.description,
            "tags": ["mooncake"], "editable": True, "graphTooltip": 1,
            "schemaVersion": 38, "version": 1, "timezone": "",
            "time": {"from": "now-1h", "to": "now"}, "refresh": "30s",
            "fiscalYearStartMonth": 0, "liveNow": False,
            "annotations": {"list": [{"builtIn": 1, "datasource": {"type": "grafana",
                                                                   "uid": "-- Grafana --"},
                                      "enable": True, "hide": True, "iconColor":
                                      "rgba(0, 211, 255, 1)", "name": "Annotations & Alerts",
                                      "type": "dashboard"}]},
            "links": [{"title": "Mooncake", "type": "dashboards", "tags": ["mooncake"],
                       "asDropdown": True, "includeVars": True, "keepTime": True}],
            "templating": {"list": [ds, inst]},
            "panels": self.panels,
        }


I = '{instance=~"$instance"}'
RI = "[$__rate_interval]"


def sel(extra=""):
    return '{instance=~"$instance"%s}' % ("," + extra if extra else "")


def rate(metric, extra=""):
    return "rate(%s%s%s)" % (metric, sel(extra), RI)


def quant(q, hist, by):
    return "histogram_quantile(%s, sum by (le, %s) (%s))" % (q, by, rate(hist + "_bucket"))


def master():
    b = Board("mooncake-master", "Mooncake / Master",
              "mooncake-master: capacity, objects, RPCs, leases, eviction, tenants, clients "
              "(docs/metrics.md).", "mooncake_master_uptime_seconds")
    b.row("Overview")
    b.stat("Uptime", "max(mooncake_master_uptime_seconds%s)" % I, "s")
    b.stat("Objects", "sum(mooncake_master_objects%s)" % I)
    b.gauge("Used / capacity", "sum(mooncake_master_allocated_bytes%s) / "
            "sum(mooncake_master_capacity_bytes%s)" % (I, I),
            desc="Bytes allocated over bytes of all mounted segments. Eviction starts at "
                 "eviction_high_watermark.",
            thresholds=[{"color": "green", "value": None}, {"color": "orange", "value": 0.9},
                        {"color": "red", "value": 0.97}])
    b.stat("Capacity", "sum(mooncake_master_capacity_bytes%s)" % I, "bytes")
    b.stat("Segments", "sum(mooncake_master_segments%s)" % I)
    b.stat("Clients", "sum(mooncake_master_clients%s)" % I,
           desc="Live clients and nodes (kept alive by heartbeats).")
    b.row("Capacity")
    b.ts("Capacity and allocated bytes",
         [("sum(mooncake_master_capacity_bytes%s)" % I, "capacity"),
          ("sum(mooncake_master_allocated_bytes%s)" % I, "allocated"),
          ("sum(mooncake_master_segment_held_bytes%s)" % I, "held")], "bytes",
         desc="held: allocated bytes of removed or evicted objects, kept until their "
              "leases and write grants end; eviction cannot free them.")
    b.ts("Used / capacity", [("sum(mooncake_master_allocated_bytes%s) / "
                              "sum(mooncake_master_capacity_bytes%s)" % (I, I), "used")],
         "percentunit", minv=0, maxv=1)
    b.ts("Used / capacity by segment",
         [("max by (name, segment) (mooncake_master_segment_used_bytes%s) / "
           "max by (name, segment) (mooncake_master_segment_capacity_bytes%s)" % (I, I),
           "{{name}}")], "percentunit", minv=0, maxv=1,
         desc="Fill of each mounted segment (draining ones included).")
    b.ts("Allocated bytes by segment",
         [("sum by (name) (mooncake_master_segment_used_bytes%s)" % I, "{{name}}")], "bytes")
    b.ts("Objects", [("sum(mooncake_master_objects%s)" % I, "objects"),
                     ("sum(mooncake_master_soft_pinned_objects%s)" % I, "soft pinned"),
                     ("sum(mooncake_master_hard_pinned_objects%s)" % I, "hard pinned")])
    b.ts("Pins and groups",
         [("sum(%s)" % rate("mooncake_master_pins_total"), "pins /s"),
          ("sum(%s)" % rate("mooncake_master_unpins_total"), "unpins /s"),
          ("sum(mooncake_master_groups%s)" % I, "groups")])
    b.row("RPC")
    b.ts("Requests by op", [("sum by (op) (%s)" % rate("mooncake_master_rpc_requests_total"),
                             "{{op}}")], "reqps")
    b.ts("Errors by op and code",
         [("sum by (op, code) (%s)" % rate("mooncake_master_rpc_errors_total"),
           "{{op}} {{code}}")], "reqps",
         desc="The common codes of every op are there at zero; other pairs appear once "
              "they have counted an error.")
    b.ts("Latency p99 by op", [(quant("0.99", "mooncake_master_rpc_duration_seconds", "op"),
                                "{{op}}")], "s", desc="Run time of the RPC handler.")
    b.ts("Latency p50 by op", [(quant("0.5", "mooncake_master_rpc_duration_seconds", "op"),
                                "{{op}}")], "s")
    b.heatmap("Latency, all ops",
              "sum by (le) (%s)" % rate("mooncake_master_rpc_duration_seconds_bucket"))
    b.ts("Error ratio, all ops",
         [("sum(%s) / sum(%s)" % (rate("mooncake_master_rpc_errors_total"),
                                  rate("mooncake_master_rpc_requests_total")), "errors")],
         "percentunit", desc="Requests answered with a non-zero status over all requests.")
    b.ts("Connections", [("sum(mooncake_master_rpc_connections%s)" % I, "open"),
                         ("sum(%s)" % rate("mooncake_master_rpc_connections_accepted_total"),
                          "accepted /s")])
    b.row("Leases and eviction")
    b.ts("Read leases granted", [("sum(%s)" % rate("mooncake_master_leases_granted_total"),
                                  "granted or extended")], "ops",
         desc="GetReplicaList, ExistKey and their batch/regex forms grant a read lease; "
              "a leased object is not evicted.")
    b.ts("Evicted objects by reason and tier",
         [("sum by (reason, tier) (%s)" % rate("mooncake_master_evicted_objects_total"),
           "{{reason}} ({{tier}})")], "ops",
         desc="tier memory: objects evicted from memory segments; tier local_disk: copies "
              "a node's disk tier evicted (or lost).")
    b.ts("Evicted bytes by reason and tier",
         [("sum by (reason, tier) (%s)" % rate("mooncake_master_evicted_bytes_total"),
           "{{reason}} ({{tier}})")], "Bps")
    b.ts("DFS shard files: used and capacity",
         [("sum(mooncake_master_dfs_used_bytes%s)" % I, "used"),
          ("sum(mooncake_master_dfs_capacity_bytes%s)" % I, "capacity")], "bytes",
         desc="DFS replicas: page-aligned ranges of the shard files under the master's "
              "shared_root (0 without it).")
    b.row("Tenants")
    b.ts("Charged bytes by tenant",
         [("sum by (tenant) (mooncake_master_tenant_charged_bytes%s)" % I, "{{tenant}}")],
         "bytes", w=8)
    b.ts("Objects by tenant",
         [("sum by (tenant) (mooncake_master_tenant_objects%s)" % I, "{{tenant}}")], w=8)
    b.ts("Quota by tenant (0: unlimited)",
         [("sum by (tenant) (mooncake_master_tenant_quota_bytes%s)" % I, "{{tenant}}")],
         "bytes", w=8)
    b.row("Clients")
    b.ts("Clients", [("sum(mooncake_master_clients%s)" % I, "live"),
                     ("sum(mooncake_master_tenants%s)" % I, "tenants")], w=8)
    b.ts("Heartbeats", [("sum(%s)" % rate("mooncake_master_heartbeats_total"), "received"),
                        ("sum(%s)" % rate("mooncake_master_heartbeats_need_remount_total"),
                         "need remount")], "ops", w=8)
    b.ts("Clients expired", [("sum(increase(mooncake_master_clients_expired_total%s%s))"
                              % (I, RI), "expired")], w=8,
         desc="Clients dropped after client_ttl_ms of silence; their segments were unmounted.")
    return b


def nodes():
    b = Board("mooncake-nodes", "Mooncake / Nodes",
              "mooncake-node: segments, data plane throughput and latency, heartbeats "
              "(docs/metrics.md).", "mooncake_node_uptime_seconds")
    b.row("Overview")
    b.stat("Nodes up", "count(mooncake_node_uptime_seconds%s)" % I)
    b.stat("Mounted", "sum(mooncake_node_mounted%s)" % I,
           desc="Nodes whose segments are mounted at the master now.")
    b.stat("Segments", "sum(mooncake_node_segments%s)" % I)
    b.stat("Segment bytes", "sum(mooncake_node_segment_bytes%s)" % I, "bytes")
    b.stat("Throughput", "sum(%s)" % rate("mooncake_node_data_bytes_total"), "Bps")
    b.stat("Data connections", "sum(mooncake_node_data_connections%s)" % I)
    b.row("Data plane")
    b.ts("Bytes in / out by node",
         [("sum by (instance, direction) (%s)" % rate("mooncake_node_data_bytes_total"),
           "{{instance}} {{direction}}")], "Bps",
         desc="in: written into segments; out: read from them.")
    b.ts("Requests by op", [("sum by (op) (%s)" % rate("mooncake_node_data_requests_total"),
                             "{{op}}")], "reqps")
    b.ts("Latency p99 by op", [(quant("0.99", "mooncake_node_data_duration_seconds", "op"),
                                "{{op}}")], "s",
         desc="Server side of a transfer: request decoded to response queued, payloads "
              "included.")
    b.ts("Latency p50 by op", [(quant("0.5", "mooncake_node_data_duration_seconds", "op"),
                                "{{op}}")], "s")
    b.heatmap("Latency, data_write and data_read",
              "sum by (le) (%s)" % rate("mooncake_node_data_duration_seconds_bucket",
                                        'op=~"data_write|data_read"'))
    b.ts("Errors by op and code",
         [("sum by (op, code) (%s)" % rate("mooncake_node_data_errors_total"),
           "{{op}} {{code}}")], "reqps",
         desc="The common codes of every op are there at zero; other pairs appear once "
              "they have counted.")
    b.ts("Requests by node", [("sum by (instance) (%s)" %
                               rate("mooncake_node_data_requests_total"), "{{instance}}")],
         "reqps")
    b.ts("Data connections by node",
         [("sum by (instance) (mooncake_node_data_connections%s)" % I, "{{instance}}")])
    b.row("Segments and master link")
    b.ts("Segment bytes by node",
         [("sum by (instance) (mooncake_node_segment_bytes%s)" % I, "{{instance}}")],
         "bytes", w=8)
    b.ts("Segments by node",
         [("sum by (instance) (mooncake_node_segments%s)" % I, "{{instance}}")], w=8)
    b.ts("Mounted (1) by node",
         [("max by (instance) (mooncake_node_mounted%s)" % I, "{{instance}}")], w=8,
         minv=0, maxv=1)
    b.ts("Heartbeats", [("sum by (instance) (%s)" % rate("mooncake_node_heartbeats_total"),
                         "{{instance}} sent"),
                        ("sum by (instance) (%s)" %
                         rate("mooncake_node_heartbeat_failures_total"), "{{instance}} failed")],
         "ops", w=8)
    b.ts("Mounts and remounts",
         [("sum by (instance) (increase(mooncake_node_mounts_total%s%s))" % (I, RI),
           "{{instance}}")], w=8)
    b.ts("Uptime", [("max by (instance) (mooncake_node_uptime_seconds%s)" % I, "{{instance}}")],
         "s", w=8)
    b.row("RDMA (transport rdma; the bytes are in Traces by transport)")
    b.ts("RDMA connections and keys",
         [("sum by (instance) (%s)" % rate("mooncake_node_rdma_connections_total"),
           "{{instance}} QPs accepted"),
          ("sum by (instance) (%s)" % rate("mooncake_node_rdma_keys_total"),
           "{{instance}} keys handed out"),
          ("sum by (instance) (%s)" % rate("mooncake_node_rdma_rejected_total"),
           "{{instance}} rejected")], "ops", w=8)
    b.ts("RDMA memory windows",
         [("sum by (instance) (%s)" % rate("mooncake_node_rdma_windows_total"),
           "{{instance}} bound"),
          ("max by (instance) (mooncake_node_rdma_windows%s)" % I, "{{instance}} live")],
         w=8)
    b.ts("RDMA keys scoped per grant (1) or whole segment (0)",
         [("max by (instance) (mooncake_node_rdma_scoped_keys%s)" % I, "{{instance}}")], w=8)
    return b


def trace():
    b = Board("mooncake-trace", "Mooncake / Traces",
              "mooncake-trace (eBPF on the USDT probes): transfers, leases, evictions, puts, "
              "TCP retransmits (docs/metrics-trace.md).", "mooncake_trace_attached_probes")
    b.row("Tracer")
    b.stat("Attached files", "sum(mooncake_trace_attached_files%s)" % I)
    b.stat("Attached probes", "sum(mooncake_trace_attached_probes%s)" % I)
    b.stat("Leases live", "sum(mooncake_trace_leases_live%s)" % I)
    b.stat("Transfers /s", "sum(%s)" % rate("mooncake_trace_transfers_total"), "ops")
    b.stat("Slow transfers /s", "sum(%s)" % rate("mooncake_trace_slow_transfers_total"), "ops",
           desc="Transfers at or over the tracer's slow_transfer_us.")
    b.stat("Transfer errors /s", "sum(%s)" % rate("mooncake_trace_transfer_errors_total"), "ops")
    b.row("Transfers")
    by = "side, op, transport"
    b.ts("Transfer latency p99 by op and transport",
         [(quant("0.99", "mooncake_trace_transfer_duration_seconds", by),
           "{{side}} {{op}} {{transport}}")], "s",
         desc="Time of one replica transfer (log2 buckets from the BPF histogram).")
    b.ts("Transfer latency p50 by op and transport",
         [(quant("0.5", "mooncake_trace_transfer_duration_seconds", by),
           "{{side}} {{op}} {{transport}}")], "s")
    b.heatmap("Transfer latency, all",
              "sum by (le) (%s)" % rate("mooncake_trace_transfer_duration_seconds_bucket"))
    b.ts("Transfer throughput by op and transport",
         [("sum by (%s) (%s)" % (by, rate("mooncake_trace_transfer_bytes_total")),
           "{{side}} {{op}} {{transport}}")], "Bps")
    b.ts("Transfers by op and transport",
         [("sum by (%s) (%s)" % (by, rate("mooncake_trace_transfers_total")),
           "{{side}} {{op}} {{transport}}")], "ops")
    b.ts("Slow and failed transfers",
         [("sum by (%s) (%s)" % (by, rate("mooncake_trace_slow_transfers_total")),
           "slow {{side}} {{op}} {{transport}}"),
          ("sum by (%s) (%s)" % (by, rate("mooncake_trace_transfer_errors_total")),
           "failed {{side}} {{op}} {{transport}}")], "ops")
    b.ts("Events by kind", [("sum by (kind) (increase(mooncake_trace_events_total%s%s))"
                             % (I, RI), "{{kind}}")],
         desc="Events read from the ring buffer: evictions, slow and failed transfers.")
    b.ts("TCP retransmits by remote",
         [("sum by (remote) (%s)" % rate("mooncake_trace_tcp_retransmits_total"), "{{remote}}")],
         "ops", desc="Kernel view, per IPv4 connection of the traced host; a connection "
                     "appears once it has retransmitted.")
    b.row("Leases")
    b.ts("Lease hold time", [(quant("0.5", "mooncake_trace_lease_hold_seconds", "instance"),
                              "p50 {{instance}}"),
                             (quant("0.99", "mooncake_trace_lease_hold_seconds", "instance"),
                              "p99 {{instance}}")], "s",
         desc="First grant to deadline of a read lease; observed when the lease runs out.")
    b.heatmap("Lease hold time",
              "sum by (le) (%s)" % rate("mooncake_trace_lease_hold_seconds_bucket"))
    b.ts("Lease grants and expiries",
         [("sum(%s)" % rate("mooncake_trace_leases_granted_total"), "granted"),
          ("sum(%s)" % rate("mooncake_trace_leases_extended_total"), "extended"),
          ("sum(%s)" % rate("mooncake_trace_leases_expired_total"), "expired"),
          ("sum(%s)" % rate("mooncake_trace_leases_untracked_total"), "untracked (map full)")],
         "ops")
    b.ts("Leases live", [("sum by (instance) (mooncake_trace_leases_live%s)" % I,
                          "{{instance}}")])
    b.row("Evictions and puts")
    b.ts("Evictions by reason", [("sum by (reason) (%s)" %
                                  rate("mooncake_trace_evictions_total"), "{{reason}}")],
         "ops", w=8)
    b.ts("Evicted bytes by reason", [("sum by (reason) (%s)" %
                                      rate("mooncake_trace_evicted_bytes_total"), "{{reason}}")],
         "Bps", w=8)
    b.ts("Evictions by tenant slot", [("sum by (tenant) (%s)" %
                                       rate("mooncake_trace_tenant_evictions_total"),
                                       "tenant {{tenant}}")], "ops", w=8)
    b.ts("Puts", [("sum(%s)" % rate("mooncake_trace_puts_started_total"), "started"),
                  ("sum(%s)" % rate("mooncake_trace_puts_ended_total"), "ended"),
                  ("sum(%s)" % rate("mooncake_trace_puts_revoked_total"), "revoked"),
                  ("sum(%s)" % rate("mooncake_trace_put_starts_failed_total"), "start failed")],
         "ops", w=8)
    b.ts("Put duration", [(quant("0.5", "mooncake_trace_put_duration_seconds", "instance"),
                           "p50 {{instance}}"),
                          (quant("0.99", "mooncake_trace_put_duration_seconds", "instance"),
                           "p99 {{instance}}")], "s", w=8,
         desc="PutStart to PutEnd as the master sees it (ms resolution).")
    b.ts("Put bytes", [("sum(%s)" % rate("mooncake_trace_put_bytes_total"), "completed")],
         "Bps", w=8)
    return b


def main():
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dashboards")
    for name, fn in (("mooncake-master", master), ("mooncake-nodes", nodes),
                     ("mooncake-trace", trace)):
        with open(os.path.join(out, name + ".json"), "w") as f:
            json.dump(fn().json(), f, indent=2)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
