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
- `kubernetes`: `KubernetesDriver` on the official client, configured by `KubernetesConnection`.
- `watch`: `ResourceCache`, one kind of object followed with LIST + WATCH across cycles.
- `k8s_state`, `k8s_objects`: pure readings of what a cluster reports (nodes, the platform's
  workloads, the GPUs pods the platform did not create hold).
- `pool`: `DriverPool`, the drivers a worker process keeps from one cycle to the next.
"""
