"""Cluster drivers behind one interface.

- `base`: the `ClusterDriver` protocol, its frozen dataclasses (`NodeInfo`, `LaunchSpec`,
  `WorkloadStatus`, `ClusterState`, ...), its errors (`ClusterUnavailable`, ...) and the pure
  helpers `node_flavor_capacity` and `workload_phase`. No Django here: the service layer maps
  database rows to these dataclasses.
- `manifests`: pure builders of the Kubernetes manifests (dicts in, dicts out).
- `kubernetes`: `KubernetesDriver` on the official client, configured by `KubernetesConnection`;
  `pod_logs`: the pure helpers of its log reading (`worker_logs`).
- `simulated`: `SimulatedDriver`, the embedded default; `simulated_logs`: its workers' generated
  log lines.
"""
