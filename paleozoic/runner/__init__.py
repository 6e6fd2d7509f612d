"""The runtime room: running what the wrapper builds, from Python.

- sdk: which SDK computes (the CPU mock or oneDNN), loading its pybind runtime with the
  OpenMP wait policy the runtimes want, and what an emitted session was built against;
- graph: a LayerQueue's layers built in a runtime Session (for the device model's costs,
  measurement and the raw form's recording);
- plan_runner: the queue compiled under a plan and run on batches, the same blocks an
  emitted session compiles.
"""
