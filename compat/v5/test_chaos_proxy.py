"""RocketMQ 5's Python client through mqproxy during fail-overs: mqchaos (the fault harness,
chaos/) runs a short seeded schedule against the controller shape (three controllers, a
broker set of three) behind an mqproxy, with the client's producer and SimpleConsumer beside
the harness's own workload, and checks that every message the client saw acknowledged is
stored by the final master and was received, and that sends kept working after each fault.

Needs root for the namespaces (CI runs as root); skipped with the reason where mqchaos
cannot run. It runs the debug binaries `cargo test --workspace --all-targets` builds.
"""
import importlib.util
import os

_spec = importlib.util.spec_from_file_location(
    "chaos_cpp", os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                              "test_chaos_cpp_sdk.py"))
_chaos = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_chaos)


def test_grpc_client_keeps_working_through_proxy_fail_overs():
    # Seed 4: two kills of the master, two isolations of it, two of the Raft leader.
    report = _chaos.run_mqchaos("proxy", 4, 6, "--grpc-python")
    _chaos.assert_sdk_kept_everything(report, "grpc", 6)
    # Each fail-over reached the client within seconds (before the proxy forgot stale
    # routes, a killed master left it without a writable queue for 27-38 s).
    worst = max(f["sdk_recovery_ms"] for f in report["faults"])
    assert worst < 15000, report["faults"]
