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
    # Seed 4: two kills and two isolations of the master, two of the Raft leader. Every
    # message the client saw acknowledged is stored and received, and the client sent again
    # after every fault (within the harness's 40 s wait). Recoveries are usually 1-6 s; one
    # of 30.6 s was seen once on CI and is being looked into (issue #36), so no tighter bound
    # is asserted here; the proxy's fast route refresh has its own test
    # (proxy_grpc::sends_resume_soon_after_the_proxy_saw_a_route_without_a_master).
    report = _chaos.run_mqchaos("proxy", 4, 6, "--grpc-python")
    _chaos.assert_sdk_kept_everything(report, "grpc", 6)
