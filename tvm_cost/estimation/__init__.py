"""End-to-end latency estimates: the shipped estimator (`api`), its baselines, TVM's sum-of-tasks estimate and
the comparison experiments. `tvm_cost.estimate` is `api.estimate`."""
