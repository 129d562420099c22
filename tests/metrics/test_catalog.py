"""The metric catalog against Prometheus' naming rules and docs/metrics.md,
and the --metrics value parser."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from probetop.probes.core.options import OptionValueError
from probetop.probes.http.metrics import HTTP_BUCKETS_S
from probetop.probes.icmp.metrics import ICMP_BUCKETS_S, SMOKEPING_LABELS
from probetop.tui.metrics.address import MetricsAddress, parse_metrics_address
from probetop.tui.metrics.state import BUILD_INFO, CATALOG

DOCS = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"
NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
BASE_UNITS = {"", "seconds", "bytes", "ratio"}

ALL = [(command, metric) for command, defs in CATALOG.items() for metric in defs]


@pytest.mark.parametrize(("command", "metric"), ALL, ids=lambda x: getattr(x, "name", x))
def test_names_follow_prometheus_rules(command: str, metric) -> None:
    assert NAME.match(metric.exposed_name)
    assert metric.unit in BASE_UNITS
    if metric.unit:
        assert metric.name.endswith("_" + metric.unit), "the unit is the name's suffix"
    for word in ("milliseconds", "_ms", "_us", "percent", "_pct", "kilobytes"):
        assert word not in metric.name, "base units only"
    assert metric.name.endswith("_total") is False  # the exposition adds it
    if metric.type == "counter":
        assert metric.exposed_name.endswith("_total")
    if metric.type == "info":
        assert metric.exposed_name.endswith("_info")
    family = "probe_" if command in ("http", "icmp") else "probetop_"
    assert metric.name.startswith((family, "probetop_", "smokeping_"))
    if command in ("cpu", "iops", "warmup"):
        assert metric.name.startswith("probetop_")
    if metric.name.startswith("smokeping_"):  # smokeping_prober's labels, no others
        assert metric.labels in (SMOKEPING_LABELS, ()), metric.name
    else:
        assert "probe" in metric.labels  # first, or after a reference exporter's own labels
    assert len(set(metric.labels)) == len(metric.labels)
    # Reserved for histograms and summaries (promtool check metrics flags them
    # elsewhere): the exposition adds `le` and `quantile` itself.
    assert "le" not in metric.labels and "quantile" not in metric.labels
    if metric.type not in ("histogram", "summary"):
        assert not metric.name.endswith(("_count", "_sum", "_bucket")), metric.name


def test_a_shared_name_means_one_thing() -> None:
    seen: dict[str, tuple[str, str, str]] = {}
    for _command, metric in ALL:
        what = (metric.type, metric.unit, metric.help)
        assert seen.setdefault(metric.name, what) == what, metric.name


@pytest.mark.parametrize(("command", "metric"), ALL, ids=lambda x: getattr(x, "name", x))
def test_every_metric_is_documented(command: str, metric) -> None:
    text = DOCS.read_text()
    section = text.split(f"\n### {command}\n", 1)[1].split("\n### ", 1)[0]
    rows = [ln for ln in section.splitlines() if ln.startswith(f"| `{metric.exposed_name}` |")]
    assert rows, f"docs/metrics.md ### {command} has no row for {metric.exposed_name}"
    cells = [c.strip() for c in rows[0].strip("|").split("|")]
    assert cells[1] == metric.type
    assert cells[2] == (metric.unit or "-")
    assert cells[3] == ", ".join(f"`{label}`" for label in metric.labels)


def test_build_info_and_buckets() -> None:
    assert BUILD_INFO.exposed_name == "probetop_build_info"
    assert "probetop_build_info" in DOCS.read_text()
    for buckets in (HTTP_BUCKETS_S, ICMP_BUCKETS_S):
        assert list(buckets) == sorted(set(buckets))
    assert HTTP_BUCKETS_S[0] <= 1e-4 and HTTP_BUCKETS_S[-1] >= 10  # loopback to seconds
    # smokeping_prober's default --buckets (main.go: ExponentialBuckets(0.00005, 2, 20))
    assert [f"{b:g}" for b in ICMP_BUCKETS_S] == [f"{5e-05 * 2**k:g}" for k in range(20)]


@pytest.mark.parametrize(
    ("text", "address"),
    [
        ("9100", MetricsAddress("127.0.0.1", 9100)),
        ("0", MetricsAddress("127.0.0.1", 0)),
        ("0.0.0.0:9100", MetricsAddress("0.0.0.0", 9100)),
        ("[::1]:9100", MetricsAddress("::1", 9100)),
        ("localhost:65535", MetricsAddress("localhost", 65535)),
    ],
)
def test_address_values(text: str, address: MetricsAddress) -> None:
    assert parse_metrics_address(text) == address


@pytest.mark.parametrize(
    "text", ["", "abc", "-1", "65536", ":9100", "::1:9100", "[::1]", "[::1]9100", "a b:1", "1.5"]
)
def test_bad_address_values(text: str) -> None:
    with pytest.raises(OptionValueError):
        parse_metrics_address(text)
