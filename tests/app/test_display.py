"""Models own their pictures: a model's ``describe_block`` gives display panels (the contract of
gaplab.core.models.display) and the app's Step tab draws them, with no change in the app for a
new model; pictures that break the contract get a clear error, never a crashed step."""
from __future__ import annotations

import re
from html import unescape

import numpy as np
import pytest

pytest.importorskip("panel")

from gaplab.app.session import Session, role_panels  # noqa: E402
from gaplab.app.views import AnatomyView  # noqa: E402
from gaplab.core.models.display import image_panel, picker  # noqa: E402
from gaplab.core.models.plain import PythonModel  # noqa: E402
from gaplab.core.problems import register_problem, unregister_problem  # noqa: E402
from gaplab.toy_examples.multilabel import MultiLabel, load_multilabel  # noqa: E402

CELL = 4   # pixels per tag cell of the strip, at zoom 1


class TagStrip(PythonModel):
    """A multi-label model (4 tags) whose picture is a strip of tag cells: grey for the input,
    the labelling's tags as a region (the app tints it) and the cells it gets wrong; a picker
    zooms the strip. Nothing about it is known to the app."""

    def describe_block(self, i, y, zoom: int = 0):
        d = super().describe_block(i, y)
        if not 0 <= zoom < 3:
            raise IndexError(f"zoom must lie in [0, 3), got {zoom}")
        yy = np.asarray(self.labels(i, y)).ravel()
        gt = np.asarray(self.labels(i, self.ground_truth(i))).ravel()
        c = CELL * (zoom + 1)
        cells = np.kron(np.ones((1, yy.size)), np.ones((c, c))) > 0        # (c, c · tags)
        on = np.kron(yy[None, :] == 1, np.ones((c, c), dtype=bool))
        wrong = np.kron((yy != gt)[None, :], np.ones((c, c), dtype=bool))
        grey = np.full(cells.shape + (3,), 100, np.uint8)
        d["panels"] = [image_panel(grey, "tags of the input", input=True),
                       image_panel(grey, "{who}'s tags", region=on, wrong=wrong, pixelated=True)]
        d["legend"] = "one cell per tag; tinted: the tag is on"
        d["picker"] = picker("zoom", "zoom", ("1×", "2×", "3×"), zoom)
        return d


@pytest.fixture
def strip():
    register_problem("tag-strip", lambda data_home=None: load_multilabel(n=12),
                     lambda train: TagStrip(MultiLabel(len(train.X[0]), len(train.Y[0])), train),
                     default_lam=0.1, description="multi-label tags drawn as a strip (a test model)", quick=True)
    s = Session(dataset="tag-strip", step_kind="pairwise", max_passes=1e6)
    try:
        assert s.wait_idle(120) and s.status == "idle", s.messages()
        yield s
    finally:
        s.close()
        unregister_problem("tag-strip")


def _rgb_of(panel):
    return np.asarray(panel["image"]).astype(int)


def test_a_new_models_picture_shows_in_the_step_tab(strip):
    s = strip
    s.step_n(40)
    assert s.wait_idle(60)
    snap = s.step()
    st = snap.last_step
    keys = [k for k, _, _ in st.panels]
    assert keys[:3] == ["input", "truth", "fw"] and keys.count("input") == 1
    caps = dict((k, c) for k, c, _ in st.panels)
    assert caps["input"] == "tags of the input" and caps["truth"] == "ground truth's tags"
    assert caps["fw"] == ("cache corner's tags" if st.cache_hit else "FW corner's tags")
    model = s.problem.model
    for key, lab in (("truth", st.truth), ("fw", st.fw_corner)):
        img = _rgb_of(next(p for k, _, p in st.panels if k == key))
        tags = np.array([int(t) for t in lab])
        cell = img[CELL // 2, CELL // 2::CELL][:tags.size]       # the centre row of each cell
        gt = model.labels(st.block, model.ground_truth(st.block)).ravel()
        tinted = cell[:, 2] != cell[:, 0]                          # grey stays r = g = b
        np.testing.assert_array_equal(tinted, tags == 1)           # the region is the tags that are on
        if key == "fw":   # a wrong cell is darker than a right one with the same tag state
            light = cell.sum(1)
            for state in (0, 1):
                bad, good = light[(tags != gt) & (tags == state)], light[(tags == gt) & (tags == state)]
                if bad.size and good.size:
                    assert bad.max() < good.min()
    view = AnatomyView()
    view.update(snap)
    html = unescape(view.word.object)
    assert html.count("class='gaplab-panel'") == len(st.panels)
    assert "ground truth's tags" in html and "tags of the input" in html
    assert "one cell per tag; tinted: the tag is on" in html
    assert f"<span class='gaplab-block'>{st.block}</span>" in html


def test_the_models_picker_changes_its_picture(strip):
    s = strip
    st = s.step().last_step
    assert st.picker == {"name": "zoom", "label": "zoom", "options": ("1×", "2×", "3×"), "value": 0}
    h0 = _rgb_of(st.panels[1][2]).shape[0]
    chosen = []
    view = AnatomyView(on_choice=lambda name, v: chosen.append((name, v)))
    view.update(s.snapshot)
    assert view.picker.visible and view.picker.name == "zoom"
    view.picker.value = 2
    assert chosen == [("zoom", 2)]
    s.set_display_option("zoom", 2)
    st = s.snapshot.last_step
    assert st.picker["value"] == 2 and _rgb_of(st.panels[1][2]).shape[0] == 3 * h0
    with pytest.raises(ValueError, match=r"value must lie in \[0, 3\) for the zoom picker, got 7"):
        s.set_display_option("zoom", 7)
    with pytest.raises(ValueError, match="value must be None or an int >= 0"):
        s.set_display_option("zoom", -1)
    s.set_display_option("zoom", None)
    assert s.snapshot.last_step.picker["value"] == 0


def test_pictures_that_break_the_contract_are_refused_clearly(strip, monkeypatch):
    with pytest.raises(ValueError, match=r"panel image must be uint8 of shape \(H, W\) or \(H, W, 3\), got float64"):
        image_panel(np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"panel region must be a bool array of shape \(2, 3\)"):
        image_panel(np.zeros((2, 3), np.uint8), region=np.zeros((3, 2), bool))
    with pytest.raises(ValueError, match=r"segments must be int pairs of point indices in \[0, 2\)"):
        image_panel(np.zeros((2, 3), np.uint8), points=[[0, 0], [1, 1]], segments=[[0, 2]])
    s = strip
    real = TagStrip.describe_block

    def broken(self, i, y, zoom=0):
        d = real(self, i, y, zoom)
        d["panels"] = [{"kind": "image", "image": np.zeros((2, 2))}]
        return d

    monkeypatch.setattr(TagStrip, "describe_block", broken)
    st = s.step().last_step                      # the step is taken and drawn without pictures
    assert st is not None and st.iteration == 0 and not st.panels
    level, text = s.messages()[-1]
    assert level == "error" and re.search(r"pictures of block \d+ are not drawn: .*panel 0: panel image must "
                                          r"be uint8", text), text
    n = len(s.messages())
    s.step()
    assert len(s.messages()) == n                # said once, not at every step


def test_a_labelling_is_tinted_in_its_colour_and_only_a_corner_is_darkened_where_wrong():
    """The app's compositing of a panel (no model needed): the region takes the labelling's
    colour, wrong pixels are darkened on a corner's panel and never on the ground truth's; a
    corner's points get the ground truth's points of the same panel to draw beneath them."""
    base = np.full((2, 2, 3), 200, np.uint8)
    region = np.array([[True, False], [True, False]])
    wrong = np.array([[False, False], [True, True]])
    pts = [[0.5, 0.5], [1.5, 1.5]]

    def desc(points):
        return {"panels": (image_panel(base, "{who}", region=region, wrong=wrong, points=points),)}

    out = role_panels(desc(pts), desc([[1.5, 0.5], [0.5, 1.5]]), None)
    (k0, c0, truth), (k1, c1, fw) = out
    assert (k0, c0, k1, c1) == ("truth", "ground truth", "fw", "FW corner")
    t, f = truth["image"].astype(int), fw["image"].astype(int)
    assert t[0, 0, 0] > t[0, 0, 2] and f[0, 0, 2] > f[0, 0, 0]     # gold vs blue tint
    np.testing.assert_array_equal(t[1], t[0])                        # the truth is never darkened
    assert np.all(f[1] < f[0]) and np.all(f[1] * 2 >= f[0] - 1)       # a corner's wrong pixels: halved
    assert truth["under"] is None and np.array_equal(fw["under"], pts)
    assert role_panels({"panels": ()}, None, None) is None
