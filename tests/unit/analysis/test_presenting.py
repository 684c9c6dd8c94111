"""Results find their renderers through the registry, never by importing them."""

from __future__ import annotations

from tftrace.analysis import presenting


class Shown:
    def __repr__(self) -> str:
        return "<Shown & co>"


class Unshown:
    def __repr__(self) -> str:
        return "<Unshown & co>"


def test_a_registered_type_and_its_subclasses_are_shown_by_its_renderer(monkeypatch):
    presenting.as_text(object())  # the project's renderers registered, before the copy
    monkeypatch.setattr(presenting, "_shown", dict(presenting._shown))
    presenting.register(Shown, text=lambda r: "text", html=lambda r: "<b>html</b>")

    class Subclass(Shown):
        pass

    assert presenting.as_text(Subclass()) == "text"
    assert presenting.as_html(Shown()) == "<b>html</b>"


def test_without_a_renderer_a_result_shows_its_repr():
    assert presenting.as_text(Unshown()) == "<Unshown & co>"
    assert presenting.as_html(Unshown()) == "<pre>&lt;Unshown &amp; co&gt;</pre>"


def test_every_result_type_has_its_renderer():
    from tftrace.analysis.analyze import Analysis
    from tftrace.analysis.cluster.analyze import ClusterAnalysis
    from tftrace.analysis.cluster.diff import ClusterDiff
    from tftrace.analysis.diff import RunDiff, SweepDiff

    presenting.as_text(object())  # the first look-up registers them
    for kind in (Analysis, RunDiff, SweepDiff, ClusterAnalysis, ClusterDiff):
        assert (kind, "text") in presenting._shown, kind
    for kind in (Analysis, RunDiff, SweepDiff, ClusterDiff):
        assert (kind, "html") in presenting._shown, kind
