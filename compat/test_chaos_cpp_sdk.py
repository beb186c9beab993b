"""The official C++ SDK through cluster faults: mqchaos (the fault harness, chaos/) runs a
short seeded schedule against a classic SYNC_MASTER/SLAVE pair in network namespaces with the
SDK's producer and push consumer beside its own workload, and checks that every message the
SDK saw acknowledged is stored by the final master and reached its consumer.

Needs root for the namespaces (CI runs as root); mqchaos exits 77 where it cannot run, and
this test is skipped then, saying why. The harness runs the debug binaries that
`cargo test --workspace --all-targets` (the first step of .ci/test) builds.
"""
import json
import os
import subprocess
import sys
import tempfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MQCHAOS = os.path.join(ROOT, "target", "debug", "mqchaos")
SKIPPED = 77


def run_mqchaos(shape, seed, faults, sdk_flag):
    """Runs one schedule with this Python as the SDK's interpreter; returns the report."""
    assert os.path.isfile(MQCHAOS), "build it first: cargo build --bins"
    with tempfile.TemporaryDirectory() as work:
        report = os.path.join(work, "report.json")
        out = subprocess.run(
            [MQCHAOS, "--shape", shape, "--seed", str(seed), "--faults", str(faults),
             sdk_flag, sys.executable, "--report", report, "--work-dir", work],
            capture_output=True, text=True, timeout=900)
        if out.returncode == SKIPPED:
            pytest.skip("the fault harness cannot run here: " + out.stderr.strip()[-300:])
        text = open(report).read() if os.path.exists(report) else ""
        assert out.returncode == 0, out.stderr[-4000:] + text[-4000:]
        return json.loads(text)[0]


def assert_sdk_kept_everything(report, client, faults):
    assert len(report["faults"]) == faults, report
    sdk = report["findings"]["sdk"]
    assert sdk["client"] == client
    assert sdk["acknowledged"] > 50, sdk
    assert sdk["lost"] == [], sdk
    assert sdk["unreceived"] == 0, sdk
    # The SDK kept working through every fault: each one's recovery was measured.
    assert all(f["sdk_recovery_ms"] is not None for f in report["faults"]), report["faults"]


def test_cpp_sdk_keeps_every_acknowledged_message_through_classic_faults():
    report = run_mqchaos("classic", 2, 3, "--cpp-python")
    assert_sdk_kept_everything(report, "cpp", 3)
