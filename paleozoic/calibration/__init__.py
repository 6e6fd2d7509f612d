"""Calibration for int8: activation ranges from the fp32 model run on the user's data, and
per-channel weight ranges, written to an editable JSON file (`paleozoic calibrate`).

Ranges become the SDK's quantisation parameters with Cambricon's arithmetic
(quant.quantized_param: real = q * 2^position / scale)."""

from paleozoic.calibration.calibrate import calibrate
from paleozoic.calibration.data import load_feeds
from paleozoic.calibration.file import CalibrationError, load_calibration, model_id
from paleozoic.calibration.quant import dequantize, quantize, quantized_param
from paleozoic.calibration.ranges import METHODS, TensorStats

__all__ = ["METHODS", "CalibrationError", "TensorStats", "calibrate", "dequantize",
           "load_calibration", "load_feeds", "model_id", "quantize", "quantized_param"]
