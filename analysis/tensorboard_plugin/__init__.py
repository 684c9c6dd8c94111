"""tftrace's TensorBoard plugin: a "Thread pools" tab for every tftrace run under the log
directory.

TensorBoard finds it through the ``tensorboard_plugins`` entry point (``plugin.ThreadPoolsPlugin``)
so that ``tensorboard --logdir DIR`` shows the tab as ``tftrace tensorboard DIR`` does. The tab is
a dynamic plugin: TensorBoard loads ``static/index.js`` into an iframe, and the page draws
itself from the plugin's JSON routes with plain DOM and SVG (no build step, nothing fetched from
elsewhere). The JSON of a run is ``dashboard.dashboard(analysis)``: the same Analysis that
``tftrace analyze`` prints, computed once per run and cached beside it (``cache.py``); runs are
found by their manifest (``runs.py``).
"""

PLUGIN_NAME = "tftrace"
TAB_NAME = "Thread pools"
