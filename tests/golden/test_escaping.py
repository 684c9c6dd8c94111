"""Names in a run are the user's text: each medium shows them through its one escaper
(``analysis/render/formatting.py``), never obeys them.

Unit tests per escaper (terminal ``printable`` and the rich helpers of ``render/console.py``,
``markdown_text``, ``csv_cell``, ``html_text``), then the commands on a hostile copy of the
sample run: ESC sequences, a newline that would forge a finding's line, rich markup, markdown
and HTML images and a spreadsheet formula in its tf.function, op, thread, host and argv names.
"""

from __future__ import annotations

import csv
import html
import io
import json
import re
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from conftest import SAMPLE_RUN, quiet_env, tftrace
from tftrace.analysis.render.console import capture, say, table, text
from tftrace.analysis.render.console import console as make_console
from tftrace.analysis.render.formatting import (
    csv_cell,
    csv_cells,
    from_csv_cell,
    from_csv_cells,
    html_text,
    markdown_table,
    markdown_text,
    printable,
)
from tftrace.analysis.render.html_sections import esc

ESC_CLEAR = "\x1b[2J"  # clears the screen
ESC_TITLE = "\x1b]0;pwned\x07"  # sets the window title
FORGED = "\n- CRITICAL forged line"
LINK = "[link=https://evil.example]x[/link]"  # rich markup: a live hyperlink (OSC 8)
CLOSE = "[/]"  # rich markup: MarkupError, a traceback
IMG = "<img src=https://evil.example/x>"
MD_IMG = "![](https://evil.example/y)"
FORMULA = '=HYPERLINK("https://evil.example")'
HOSTILE = ESC_CLEAR + ESC_TITLE + LINK + CLOSE + IMG + MD_IMG + FORGED
# an op name: no whitespace and no ':' (what the trace's "name:type" allows)
OP_NAME = '=HYPERLINK("evil.example")' + ESC_CLEAR + CLOSE + "<img/src=x>"
NAMES = [HOSTILE, FORMULA, OP_NAME, "a_b*c*`d` #h |p| &amp; <https://evil.example> \\x"]


# --- terminal ---------------------------------------------------------------------------------


def test_printable_shows_control_characters():
    assert printable("a\x1b[2J\nb") == "a\\x1b[2J\\nb"
    assert printable(HOSTILE).count("\n") == 0 and "\x1b" not in printable(HOSTILE)
    assert printable(printable(HOSTILE)) == printable(HOSTILE)  # shown once, not twice
    assert printable("tf_Compute · intra-op") == "tf_Compute · intra-op"


def test_rich_text_and_tables_never_read_markup():
    def draw(out: Any) -> None:
        say(out, f"line {HOSTILE}")
        shown = table(f"title {LINK}{CLOSE}", title_justify="left")
        shown.add_column(f"name {CLOSE}")
        shown.add_column("ms", justify="right")
        shown.add_row(LINK + CLOSE, "1.50")
        shown.add_row(":smile:", "12.25")
        out.print(shown)

    plain = capture(draw, width=200)
    assert LINK + CLOSE in plain and f"title {LINK}{CLOSE}" in plain
    assert ":smile:" in plain and "\x1b" not in plain
    assert "\\x1b[2J" in plain and "\n- CRITICAL" not in plain
    assert re.search(r"│ +1\.50 │", plain) and re.search(r"│ +12\.25 │", plain)  # figures right
    buffer = io.StringIO()  # a colour terminal: styles, but no link and no sequence of a name's
    draw(make_console(file=buffer, force_terminal=True, color_system="truecolor", width=200))
    coloured = buffer.getvalue()
    assert "\x1b[" in coloured and "\x1b]8;" not in coloured
    assert ESC_CLEAR not in coloured and ESC_TITLE not in coloured
    assert text(HOSTILE).plain == printable(HOSTILE)


# --- markdown ---------------------------------------------------------------------------------


def tensorboard_html(markdown: str) -> str:
    """The markdown as TensorBoard's text plugin shows it (its own renderer and sanitizer)."""
    from tensorboard.plugin_util import markdown_to_safe_html

    return str(markdown_to_safe_html(markdown))


@pytest.mark.parametrize("name", [*NAMES, "1. item", "- item", "+ item", "---", "# head"])
def test_markdown_text_shows_the_name_as_itself(name: str):
    shown = tensorboard_html(markdown_text(name))
    assert shown == "<p>" + html.escape(printable(name), quote=False) + "</p>"
    assert "<img" not in shown and "<a " not in shown


def test_markdown_text_escapes_each_special():
    assert markdown_text("<img src=x>") == "&lt;img src=x&gt;"
    assert markdown_text("![a](u)") == "\\!\\[a\\]\\(u\\)"
    assert markdown_text("*_`|#&") == "\\*\\_\\`\\|\\#&amp;"
    assert markdown_text("a\nb") == "a\\\\nb"  # the newline shown, not obeyed
    assert markdown_text("inter-op 1.50 ms") == "inter-op 1.50 ms"  # tftrace's words unchanged


def test_markdown_table_keeps_its_cells():
    shown = tensorboard_html(markdown_table(("op", "ms"), [(f"a|b{IMG}", "1.5"), (HOSTILE, "-")]))
    assert shown.count("<td>") == 4 and "<img" not in shown
    assert "<td>a|b&lt;img src=https://evil.example/x&gt;</td>" in shown


# --- CSV --------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["=1+2", "+1", "-1", "@SUM(A1)", "\tx", "\rx", "'=x", FORMULA])
def test_csv_cell_marks_formulas_as_text(value: str):
    assert csv_cell(value) == "'" + value
    assert from_csv_cell(csv_cell(value)) == value


@pytest.mark.parametrize("value", ["MatMul", "", "a=b", None, 3, 1.5, float("nan")])
def test_csv_cell_leaves_the_rest(value: Any):
    assert csv_cell(value) is value


def test_csv_cells_of_a_frame():
    frame = pd.DataFrame(
        {
            "name": pd.Categorical([FORMULA, "tf_Compute", FORMULA]),
            "text": pd.Series(["-x", None, ""], dtype=object),
            "s": pd.Series(["@x", "ok", None], dtype="string"),
            "n": [-1, 2, 3],
        }
    )
    out = csv_cells(frame)
    assert list(out["name"]) == ["'" + FORMULA, "tf_Compute", "'" + FORMULA]
    assert out["text"].tolist() == ["'-x", None, ""] and out["n"].tolist() == [-1, 2, 3]
    assert out["s"].tolist()[:2] == ["'@x", "ok"] and pd.isna(out["s"].iloc[2])
    assert list(map(str, out.dtypes)) == list(map(str, frame.dtypes))
    pd.testing.assert_frame_equal(from_csv_cells(out), frame)
    assert frame["text"].tolist() == ["-x", None, ""]  # the frame given is not changed


# --- HTML -------------------------------------------------------------------------------------


def test_html_text_escapes_text_and_attributes():
    assert html_text('"><img src=x onerror=alert(1)>') == (
        "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"
    )
    assert html_text("it's & <b>") == "it&#x27;s &amp; &lt;b&gt;"
    assert esc is html_text  # the report's pieces escape through the one function


# --- end to end: a hostile run ----------------------------------------------------------------


def hostile_copy(src: Path, dst: Path) -> Path:
    """A copy of ``src`` whose names are hostile: the manifest's name, hostname, argv,
    workload command and arguments and a variable; three OS thread names (a formula first);
    a Python thread's name; the tf.function's name and an op's name in the trace."""
    from tftrace.analysis.xplane import schema as xplane_proto

    run = Path(shutil.copytree(src, dst))
    manifest = json.loads((run / "manifest.json").read_text())
    manifest.update(name=HOSTILE, argv=[*manifest["argv"], HOSTILE])
    manifest["host"]["hostname"] = HOSTILE
    manifest["workload_command"].append(HOSTILE)
    manifest["target"]["args"] = [HOSTILE]
    manifest["env"]["HOSTILE_VAR"] = HOSTILE
    (run / "manifest.json").write_text(json.dumps(manifest))
    threads = json.loads((run / "os_threads/threads.json").read_text())
    for thread in threads["threads"][-3:]:
        thread["name"] = FORMULA + HOSTILE
        thread["names"] = [thread["name"]]
    (run / "os_threads/threads.json").write_text(json.dumps(threads))
    identity = json.loads((run / "thread_identity.json").read_text())
    for thread in identity["threads"]:
        if thread.get("python_name") == "side-worker":
            thread["python_name"] = HOSTILE
    (run / "thread_identity.json").write_text(json.dumps(identity))
    (trace,) = run.glob("plugins/profile/*/*.xplane.pb")
    space = xplane_proto.XSpace()
    space.ParseFromString(trace.read_bytes())
    renamed = {"two_chains": "two_chains" + HOSTILE, "MatMul_1:_MklMatMul": OP_NAME + ":_MklMatMul"}
    for plane in space.planes:
        for meta in plane.event_metadata.values():
            meta.name = renamed.get(meta.name, meta.name)
    trace.write_bytes(space.SerializeToString())
    return run


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(a plain copy of the sample run, its hostile copy)."""
    root = tmp_path_factory.mktemp("escaping")
    return Path(shutil.copytree(SAMPLE_RUN, root / "plain")), hostile_copy(
        SAMPLE_RUN, root / "evil"
    )


def shown_not_obeyed(*args: str | Path, env: dict[str, str] | None = None) -> str:
    """Run ``tftrace ARGS``: exit 0, no escape sequence, traceback or forged line on either
    stream, no link; its stdout."""
    done = tftrace(*args, env=env)
    assert done.returncode == 0, done.stderr
    for stream in (done.stdout, done.stderr):
        assert "\x1b" not in stream, stream
        assert "Traceback" not in stream and "MarkupError" not in stream
        assert not [line for line in stream.splitlines() if line.startswith("- CRITICAL forged")]
    return done.stdout


@pytest.mark.parametrize("command", ["analyze", "summary", "threads"])
def test_a_command_shows_the_names(runs: tuple[Path, Path], command: str):
    out = shown_not_obeyed(command, runs[1])
    assert "\\x1b" in out and "CRITICAL" in out and CLOSE in out  # the names, as text
    if command != "threads":  # (its table folds them)
        assert printable(HOSTILE).split(" ")[0] in out


def test_a_colour_terminal_gets_no_link(runs: tuple[Path, Path]):
    env = {k: v for k, v in quiet_env().items() if k not in ("NO_COLOR", "TERM", "COLORTERM")}
    env.update(FORCE_COLOR="1", TERM="xterm-256color", COLORTERM="truecolor")
    env["TFTRACE_PROGRESS_DELAY_S"] = "600"
    for command in ("analyze", "threads"):
        done = tftrace(command, runs[1], env=env)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
        out = done.stdout
        assert "\x1b[" in out  # a terminal: styled
        assert "\x1b]8;" not in out and ESC_CLEAR not in out and ESC_TITLE not in out
        assert "evil.example" in out  # the name is there, as text


def test_diff_shows_the_names(runs: tuple[Path, Path], tmp_path: Path):
    page = tmp_path / "diff.html"
    out = shown_not_obeyed("diff", runs[0], runs[1], "--html", page)
    assert "env HOSTILE_VAR" in out and "\\x1b]0;pwned\\x07" in out
    written = page.read_text()
    assert "<img src=https://evil" not in written and "&lt;img src=https://evil" in written
    shown_not_obeyed("diff", runs[1], runs[1])


def test_export_csv_marks_formulas(runs: tuple[Path, Path], tmp_path: Path):
    from tftrace.analysis.export.tables import read_tables

    out = tmp_path / "csv"
    shown_not_obeyed("export", runs[1], "--format", "csv", "-o", out)
    cells = {
        name: [c for row in csv.reader(io.StringIO((out / f"{name}.csv").read_text())) for c in row]
        for name in ("threads", "events")
    }
    for name, values in cells.items():
        text = [c for c in values if not re.fullmatch(r"-?[0-9.]+(e-?[0-9]+)?", c)]  # not figures
        assert not [c for c in text if c[:1] in ("=", "+", "-", "@", "\t", "\r")], name
    assert "'" + FORMULA + HOSTILE in cells["threads"]
    assert "'" + OP_NAME in cells["events"]
    back = read_tables(out)  # tftrace's reader takes the quote off again
    assert FORMULA + HOSTILE in set(back["threads"]["os_name"].dropna())
    assert OP_NAME in set(back["events"]["op_name"].dropna())


def test_report_escapes_the_names(runs: tuple[Path, Path], tmp_path: Path):
    page = tmp_path / "report.html"
    shown_not_obeyed("report", runs[1], "-o", page)
    text = page.read_text()
    assert "&lt;img src=https://evil.example/x&gt;" in text
    images = re.findall(r"<img\b[^>]*>", text)
    assert images and all('src="data:image/png;base64,' in i for i in images)
    assert "evil.example" not in "".join(re.findall(r"<a\b[^>]*>", text))


def test_cross_host_output_shows_the_names(runs: tuple[Path, Path], tmp_path: Path):
    job = tmp_path / "job"
    shutil.copytree(runs[0], job / "worker-0")
    shutil.copytree(runs[1], job / f"evil{ESC_CLEAR}\n- CRITICAL forged [link=x]y[bold] <img>")
    out = shown_not_obeyed("analyze", job)
    assert "evil\\x1b[2J\\n- CRITICAL forged [link=x]y[bold] <img>" in out


def test_tensorboard_text_shows_the_names(runs: tuple[Path, Path], tmp_path: Path):
    from tensorboard.backend.event_processing import plugin_event_accumulator as pea
    from tensorboard.util import tensor_util

    from tftrace.analysis.analyze import analyze
    from tftrace.analysis.findings import Finding, Severity
    from tftrace.analysis.model.run import load
    from tftrace.analysis.render.tensorboard import write_summaries

    analysis = analyze(load(runs[1]))
    finding = Finding("evil-finding", Severity.HIGH, "inter-op", f"msg {HOSTILE}", FORMULA + IMG)
    directory = write_summaries(replace(analysis, findings=(finding,)), directory=tmp_path)
    accumulator = pea.EventAccumulator(str(directory), size_guidance={pea.TENSORS: 0})
    accumulator.Reload()
    shown = {}
    for tag in ("about", "findings", "figures"):
        (event,) = accumulator.Tensors(tag)
        markdown = tensor_util.make_ndarray(event.tensor_proto).item().decode()
        shown[tag] = tensorboard_html(markdown)
        assert "<img" not in shown[tag] and "<a " not in shown[tag], tag
        assert "\n- CRITICAL" not in markdown and "CRITICAL forged</li>" not in shown[tag], tag
    # the names are there, as text: the tf.function's (the window), the finding's
    assert "&lt;img src=https://evil.example/x&gt;![](https://evil.example/y)" in shown["about"]
    assert "=HYPERLINK(" in shown["findings"] and "[link=https://evil" in shown["findings"]
