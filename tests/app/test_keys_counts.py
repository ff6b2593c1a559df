"""Every presenter key press counts, even when the server merges rapid changes (issue 24
item 10: 210 rapid ← presses went back only 117 steps). Panel applies only the latest value
of a property that changed several times while its last change was pending, so the page
sends running counts per action and the server acts on the difference."""
import pytest

pytest.importorskip("panel")


def test_merged_counts_give_one_action_per_press():
    from gaplab.app.keys import _RENDER, KeyboardShortcuts
    assert "data.counts" in _RENDER and "data.press" not in _RENDER   # counts, not the last press
    k = KeyboardShortcuts()
    seen = []
    k.param.watch(lambda e: seen.append((KeyboardShortcuts.action_of(e.new), KeyboardShortcuts.count_of(e.new))),
                  "press")

    def presses():
        return {a: sum(c for b, c in seen if b == a) for a in {a for a, _ in seen}}
    k.counts = "back:1"
    assert presses() == {"back": 1}
    k.counts = "back:7"                  # six presses merged into one change: one action of six
    assert presses() == {"back": 7} and seen[-1] == ("back", 6)
    k.counts = "back:7,step:2"           # two steps merged; back unchanged
    assert presses() == {"back": 7, "step": 2}
    k.counts = "back:7,bogus:3,step:x"   # not a counts value: nothing acted on
    k.counts = "back:7,step:3,run:2"     # two r presses cancel
    assert presses() == {"back": 7, "step": 3}


def test_two_hundred_merged_back_presses_go_back_two_hundred_steps():
    from gaplab.app.main import build_app
    app = build_app(dataset="toy", periodic=False)
    try:
        s = app.session
        assert s.wait_idle(120)
        for _ in range(230):
            s.step()
        assert s.snapshot.iteration == 230
        for counts in ("back:1", "back:117", "back:200"):   # 200 presses in three merged batches
            app.keys.counts = counts
        assert s.wait_idle(120)   # (in the session's worker)
        assert s.snapshot.iteration == 30
    finally:
        app.close()
