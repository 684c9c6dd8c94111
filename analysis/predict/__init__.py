"""Predict each thread setting's step time from one recorded run (``tftrace predict``):
``items`` (what each thread did), ``step_work`` (each step as units of work), ``replay`` (the
units on a setting), ``predicting`` (the call: calibration, settings, bases), ``result``."""

from tftrace.analysis.predict.predicting import predict
from tftrace.analysis.predict.result import Prediction, SettingPrediction

__all__ = ["Prediction", "SettingPrediction", "predict"]
