"""The accuracy room: how right a session's numbers are.

- truth: a float64 evaluation of the ONNX model, the truth fp32 results are measured against;
- verify: an emitted session run against onnxruntime (and the truth), or held to bit
  identity with the runtime's run of its plan in reduced precision;
- tune: accuracy-aware tuning (tune --accuracy-budget): sensitivities, the cost/noise front,
  held-out checks;
- debug: where a session's accuracy goes, block by block and layer by layer, and the fix.
"""
