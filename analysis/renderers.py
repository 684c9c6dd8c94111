"""Every result type with the functions that show it (``presenting`` imports this module on
its first look-up): the terminal text of ``print(result)`` and the HTML of ``to_html()`` or,
for an ``Analysis``, Jupyter's ``_repr_html_``."""

from tftrace.analysis.analyze import Analysis
from tftrace.analysis.cluster.analyze import ClusterAnalysis
from tftrace.analysis.cluster.diff import ClusterDiff
from tftrace.analysis.cluster.diff_render import cluster_diff_page, cluster_diff_text
from tftrace.analysis.cluster.render import cluster_text
from tftrace.analysis.diff.render import diff_page, diff_text, sweep_page, sweep_text
from tftrace.analysis.diff.result import RunDiff
from tftrace.analysis.diff.sweep_dir import SweepDiff
from tftrace.analysis.predict.result import Prediction
from tftrace.analysis.presenting import register
from tftrace.analysis.render.html import analysis_fragment
from tftrace.analysis.render.predict_text import prediction_page, prediction_text
from tftrace.analysis.render.terminal import render_text

register(Analysis, text=render_text, html=analysis_fragment)
register(RunDiff, text=diff_text, html=diff_page)
register(SweepDiff, text=sweep_text, html=sweep_page)
register(ClusterAnalysis, text=cluster_text)
register(ClusterDiff, text=cluster_diff_text, html=cluster_diff_page)
register(Prediction, text=prediction_text, html=prediction_page)
