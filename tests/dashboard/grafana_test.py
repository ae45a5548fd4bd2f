#!/usr/bin/env python3
"""deploy/grafana/traind-dashboard.json against the metrics a live traind exports
(tests/dashboard/with_dashboard.sh starts one): the dashboard is a well-formed Grafana dashboard
(an importable datasource input, unique panel ids and query ids, panels placed on the grid), every
metric its queries name is one /metrics has while a job runs, and every traind metric /metrics
has is on some panel.
"""
import json
import os
import pathlib
import re
import subprocess
import sys
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "deploy" / "grafana" / "traind-dashboard.json"
BASE = os.environ["TRAIND_DASHBOARD_URL"]
TOKEN = open(os.environ["TRAIND_HTTP_TOKEN_FILE"]).read().strip()
METRIC = re.compile(r"\btraind_[a-z_]+\b")
PANEL_TYPES = {"stat", "timeseries", "gauge", "table", "bargauge", "text"}


def exported_families():
    """The traind metric families /metrics declares now (its # TYPE lines)."""
    request = urllib.request.Request(BASE + "/metrics")
    request.add_header("Authorization", "Bearer " + TOKEN)
    with urllib.request.urlopen(request, timeout=30) as response:
        text = response.read().decode()
    return set(re.findall(r"^# TYPE (traind_[a-z_]+) ", text, re.MULTILINE))


def check_structure(dashboard):
    inputs = {i["name"] for i in dashboard.get("__inputs", [])}
    assert "DS_PROMETHEUS" in inputs, "the dashboard declares its Prometheus datasource input"
    assert dashboard["uid"] and dashboard["title"] and dashboard["schemaVersion"] >= 30
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids)), f"panel ids repeat: {ids}"
    for panel in dashboard["panels"]:
        where = f"panel {panel['id']} ({panel.get('title')})"
        assert panel["type"] in PANEL_TYPES, f"{where}: type {panel['type']}"
        assert panel["datasource"]["uid"] == "${DS_PROMETHEUS}", where
        grid = panel["gridPos"]
        assert 0 <= grid["x"] and grid["x"] + grid["w"] <= 24 and grid["h"] > 0, f"{where}: {grid}"
        refs = [t["refId"] for t in panel["targets"]]
        assert refs and len(refs) == len(set(refs)), f"{where}: query ids {refs}"
        for target in panel["targets"]:
            assert METRIC.search(target["expr"]), f"{where}: {target['expr']} names no metric"


def queried_metrics(dashboard):
    names = set()
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            names |= set(METRIC.findall(target["expr"]))
    for variable in dashboard.get("templating", {}).get("list", []):
        names |= set(METRIC.findall(variable.get("query", "")))
    return names


def main():
    dashboard = json.loads(DASHBOARD.read_text())
    check_structure(dashboard)
    # A job that runs until cancelled: its per-job series exist only while it has a step.
    job = subprocess.run(["trainctl", "submit", "--model", "mlp", "--dataset", "fake",
                          "--epochs", "1000", "--log-every", "1", "--device", "cpu"],
                         check=True, capture_output=True, text=True).stdout.strip()
    try:
        deadline = time.monotonic() + 300
        families = exported_families()
        while "traind_job_samples_per_second" not in families:
            assert time.monotonic() < deadline, f"no running job's series in 300 s: {families}"
            time.sleep(0.2)
            families = exported_families()
    finally:
        subprocess.run(["trainctl", "cancel", job], capture_output=True)
    queried = queried_metrics(dashboard)
    # Counters are queried by their sample name (traind_events_total), declared the same way.
    missing = sorted(queried - families)
    assert not missing, f"the dashboard queries metrics traind does not export: {missing}"
    unshown = sorted(families - queried)
    assert not unshown, f"traind exports metrics no panel shows: {unshown}"
    print(f"ok - {len(dashboard['panels'])} panels query {len(queried)} metrics, all exported")
    return 0


if __name__ == "__main__":
    sys.exit(main())
