"""Text from a file, a typed path or an exception is shown as text, never run as markup: the
escaping helpers of :mod:`gaplab.app.safe_html`, and every sink that showed such text
(the alert and the toasts, the path tab, the Sweeps tab, the toy tab, the status line, the
anatomy) fed a script-carrying payload. The rendered HTML of every pane (what the browser's
innerHTML gets) must hold no element or attribute from the payload. The browser test of the same
cases is tests/browser/test_hostile_input.py."""
from __future__ import annotations

import dataclasses
import html
import json
from html.parser import HTMLParser

import pytest

pn = pytest.importorskip("panel")

from gaplab.app import main as app_main  # noqa: E402
from gaplab.app import refresh as app_refresh  # noqa: E402

from gaplab.app.safe_html import choice_labels, esc, md_esc  # noqa: E402

PAYLOAD = "/x<img src=x onerror=document.title=document.domain+location.port>"
MD_PAYLOAD = "[a](javascript:alert(1)) ![i](x) **b** _c_ `d` <script>alert(1)</script> & \"q\" 'q'"


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags, self.text = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    handle_startendtag = handle_starttag

    def handle_data(self, data):
        self.text.append(data)


def parse(markup: str) -> _Tags:
    p = _Tags()
    p.feed(markup)
    p.close()
    return p


def rendered(pane) -> str:
    """The HTML a pane's Bokeh model carries, as the page sets it as innerHTML (Panel sends it
    HTML-escaped; the page unescapes it once)."""
    return html.unescape(pane._transform_object(pane.object)["object"])


def live(tags):
    """Elements or attributes that would run code or load a resource from the payload."""
    bad = []
    for tag, attrs in tags:
        if tag in ("script", "iframe", "object", "embed"):
            bad.append((tag, attrs))
        if any(k.startswith("on") for k in attrs):
            bad.append((tag, attrs))
        if tag == "img" and attrs.get("src") == "x":
            bad.append((tag, attrs))
        if tag == "a" and "javascript" in (attrs.get("href") or ""):
            bad.append((tag, attrs))
    return bad


def assert_inert(layout, must_show=None):
    """No pane of ``layout`` renders a live element; ``must_show`` (a text) is shown verbatim
    by at least one pane."""
    shown = []
    panes = list(layout.select(pn.pane.HTML)) + list(layout.select(pn.pane.Markdown))
    assert panes
    for pane in panes:
        if pane.object is None or (isinstance(pane.object, str) and not pane.object):
            continue
        p = parse(rendered(pane))
        assert live(p.tags) == [], (type(pane).__name__, rendered(pane)[:500])
        shown.append("".join(p.text))
    if must_show is not None:
        assert any(must_show in t for t in shown), shown


# ---------------------------------------------------------------------------- the helpers
def test_esc_gives_text_in_content_and_attributes():
    for s in (PAYLOAD, MD_PAYLOAD, "a & b", "it's \"q\""):
        p = parse(f"<div title='{esc(s)}' data-x=\"{esc(s)}\">{esc(s)}</div>")
        assert p.tags == [("div", {"title": s, "data-x": s})]
        assert "".join(p.text) == s


@pytest.mark.parametrize("payload", [PAYLOAD, MD_PAYLOAD, "a_b_c path/to_x.npz *x* #h\n- item"])
def test_md_esc_renders_as_the_same_text_in_markdown_and_alert_panes(payload):
    for cls in (pn.pane.Markdown, pn.pane.Alert):
        pane = cls(md_esc(payload))
        p = parse(rendered(pane))
        assert live(p.tags) == []
        # only the paragraph Markdown wraps text in: no link, image, emphasis, code or list
        assert {t for t, _ in p.tags} <= {"p"}, rendered(pane)
        assert " ".join("".join(p.text).split()) == " ".join(payload.split())


def test_choice_labels_keep_values_and_escape_labels():
    opts = choice_labels([PAYLOAD, "plain"])
    assert list(opts.values()) == [PAYLOAD, "plain"] and "<" not in "".join(opts)
    w = pn.widgets.MultiChoice(options=opts, value=[PAYLOAD])
    assert w.value == [PAYLOAD]
    model = w.get_root()
    # what BokehJS hands Choices.js (rendered with innerHTML): escaped labels only
    labels = [o if isinstance(o, str) else o[1] for o in model.options]
    assert all("<" not in lab for lab in labels) and esc(PAYLOAD) in labels


# ---------------------------------------------------------------------------- the sinks
class _Toasts:
    def __init__(self):
        self.sent = []

    def __getattr__(self, level):
        return lambda text, duration=0: self.sent.append((level, text))


def test_alert_and_toasts_show_a_message_as_text(app, monkeypatch):
    toasts = _Toasts()
    monkeypatch.setattr(app_refresh, "_notifications", lambda: toasts)
    app.session.notify(f"Open path store: {PAYLOAD} {MD_PAYLOAD}", "error")
    app.refresh(force=True)
    assert app.alert.visible
    p = parse(rendered(app.alert))
    assert live(p.tags) == [] and PAYLOAD in "".join(p.text)
    assert len(toasts.sent) == 1 and toasts.sent[0][0] == "error"
    t = parse(toasts.sent[0][1])   # notyf sets the message as innerHTML
    assert t.tags == [] and "".join(t.text) == f"Open path store: {PAYLOAD} {MD_PAYLOAD}"


def test_open_store_with_a_script_in_the_typed_path(app, monkeypatch):
    toasts = _Toasts()
    monkeypatch.setattr(app_refresh, "_notifications", lambda: toasts)
    app.tabs.active = app_main.PATH
    assert app.path_view.open_store(PAYLOAD) is False
    app.refresh(force=True)
    assert_inert(app._layout, must_show=PAYLOAD)
    assert toasts.sent and all(parse(t).tags == [] for _, t in toasts.sent)


def _tiny_path_store(tmp_path):
    from conftest import random_chain_data
    from gaplab.core import ChainModel
    from gaplab.core.regpath import PathConfig, regularization_path
    model = ChainModel(random_chain_data(n=8, K=3, F=4, seed=0))
    store = tmp_path / "store"
    regularization_path(model, PathConfig(eps=0.5, lam_min=0.1), store=store, meta={"dataset": "ocr-small"})
    return store


def test_a_path_store_with_a_script_in_a_file_entry(app, tmp_path, monkeypatch):
    """The "broken file entry" message quotes the manifest's entry."""
    store = _tiny_path_store(tmp_path)
    man = json.loads((store / "manifest.json").read_text())
    assert len(man["files"]) >= 3
    man["files"][2]["file"] = "<img src=x onerror=document.title=document.domain+location.port>"
    (store / "manifest.json").write_text(json.dumps(man))
    toasts = _Toasts()
    monkeypatch.setattr(app_refresh, "_notifications", lambda: toasts)
    app.tabs.active = app_main.PATH
    assert app.path_view.open_store(str(store)) is False
    app.refresh(force=True)
    assert "broken file entry" in app.session.messages()[-1][1]
    assert_inert(app._layout, must_show="<img src=x onerror=")
    assert toasts.sent and all(parse(t).tags == [] for _, t in toasts.sent)


def _sweep_store(tmp_path, done: bool = False):
    """A hand-written sweep store whose manifest's text fields carry the payload: one failed
    run, and with ``done`` also a finished run (its Parquet file missing: the Sweeps tab offers
    its method, then reports the missing file)."""
    store = tmp_path / ("sweep_done" if done else "sweep")
    (store / "runs").mkdir(parents=True)
    cfg = {"kind": "solve", "method": PAYLOAD, "dataset": PAYLOAD, "lam": PAYLOAD, "seed": 0}
    runs = {"r1": {"status": "failed", "config": cfg, "error": PAYLOAD, "attempts": 1}}
    if done:
        runs["r2"] = {"status": "done", "config": dict(cfg, seed=1), "file": "runs/r2.parquet"}
    man = {"store_format": 1, "spec_name": PAYLOAD, "spec_version": PAYLOAD, "spec": {}, "runs": runs}
    (store / "manifest.json").write_text(json.dumps(man))
    return store


def test_a_sweep_store_with_scripts_in_its_manifest(tmp_path):
    from gaplab.app.sweeps_tab import SweepsView
    view = SweepsView(store=_sweep_store(tmp_path))
    assert view.store is not None
    assert_inert(view.panel, must_show=f"v{PAYLOAD}")
    table = parse(rendered(view.table))   # the runs table (pandas escapes it)
    assert live(table.tags) == [] and PAYLOAD in "".join(table.text)
    # a finished run: its method is offered in the picker (Choices.js renders labels as HTML)
    view = SweepsView(store=_sweep_store(tmp_path, done=True))
    labels = [o if isinstance(o, str) else o[1] for o in view.methods.get_root().options]
    assert labels and all("<" not in lab for lab in labels)
    assert view.methods.value == [PAYLOAD]
    assert_inert(view.panel)


def test_the_sweeps_tab_in_the_app_loads_a_scripted_store(app, tmp_path):
    app.tabs.active = app_main.SWEEPS
    app.sweeps_view.path_input.value = str(_sweep_store(tmp_path))
    app.sweeps_view.load_button.clicks += 1
    app.refresh(force=True)
    assert app.sweeps_view.store is not None
    assert_inert(app._layout, must_show=f"v{PAYLOAD}")


def test_toy_tab_errors_are_text(app):
    app.tabs.active = app_main.TOY
    view = app.toy_view
    app.toy.error = PAYLOAD
    app.toy.sweep_error = PAYLOAD
    app.toy.version += 1
    view.update(force=True)
    assert_inert(view.panel, must_show=f"Could not run: {PAYLOAD}")
    assert_inert(view.panel, must_show=f"Sweep failed: {PAYLOAD}")


def test_status_line_and_anatomy_show_notes_and_names_as_text(app):
    from gaplab.app.views import AnatomyView, StatusView
    app.session.step()
    snap = app.session.snapshot
    assert snap.last_step is not None
    st = dataclasses.replace(snap.last_step, note=PAYLOAD)
    loading = dataclasses.replace(snap, dataset=PAYLOAD, status="loading", note=PAYLOAD)
    unloaded = dataclasses.replace(loading, n=0, last_step=None)
    stepped = dataclasses.replace(snap, dataset=PAYLOAD, last_step=st)
    for s in (loading, unloaded, stepped):
        status, anatomy = StatusView(), AnatomyView()
        status.update(s, True)
        anatomy.update(s, True)
        assert_inert(status.panel, must_show=PAYLOAD)
        # the anatomy names the dataset and its note while nothing is loaded, and a block's note
        assert_inert(anatomy.panel, must_show=PAYLOAD if s is not loading else None)
