"""Keyboard shortcuts of the presenter: space = Step, → = Step ×N, ← = back one step, r = Run/Pause,
p = projector mode.

A small Panel ``ReactiveHTML`` component adds one ``keydown`` listener to the page's document
(removed with the component). Keys typed into an input, a text area, a select or an editable
element are left alone, and so are keys with Ctrl, Alt or Meta.

Every press counts. The page keeps a running count per action and sends them all in
``counts`` (``"back:63,step:10"``). The server may merge several changes of one property
that arrive while it is busy into the last one (Panel applies the latest value of a property
once per batch), so a value per press would lose presses under load; the counts lose none:
the component compares them with the counts it has acted on and sets ``press`` to
``"<action>:<n>"`` (``n`` a running number, so each is a new value) once per press not yet
acted on. The app watches ``press`` and calls the action. Presses merged in one batch run
grouped by action (their order across actions within the batch is not kept).
"""
from __future__ import annotations

import json

import param
from panel.reactive import ReactiveHTML

__all__ = ["KEYMAP", "KeyboardShortcuts", "KEY_HELP"]

#: KeyboardEvent.key -> action name
KEYMAP = {" ": "step", "ArrowRight": "step_n", "ArrowLeft": "back", "r": "run", "R": "run",
          "p": "projector", "P": "projector"}

#: one line a tooltip can show
KEY_HELP = "Keys: space = Step, → = Step ×N, ← = back one step, r = Run/Pause, p = projector mode."

_RENDER = """
const keymap = %s;
const counts = {};
state.handler = (e) => {
  if (e.ctrlKey || e.metaKey || e.altKey || e.isComposing) return;
  const action = keymap[e.key];
  if (action === undefined) return;
  const path = e.composedPath ? e.composedPath() : [e.target];
  for (const el of path) {
    if (!el || !el.tagName) continue;
    const tag = el.tagName.toUpperCase();
    if (tag === 'INPUT' || tag === 'TEXTAREA' || tag === 'SELECT' || el.isContentEditable) return;
  }
  e.preventDefault();
  counts[action] = (counts[action] || 0) + 1;
  data.counts = Object.keys(counts).sort().map((a) => a + ':' + counts[a]).join(',');
};
document.addEventListener('keydown', state.handler);
""" % json.dumps(KEYMAP)

_REMOVE = """
if (state.handler) { document.removeEventListener('keydown', state.handler); state.handler = null; }
"""


class KeyboardShortcuts(ReactiveHTML):
    """An invisible component that turns the presenter keys into ``press`` values
    (``"<action>:<count>"``, action one of ``KEYMAP``'s values)."""

    press = param.String(default="", doc="The last key's action and a running count, e.g. 'step:3'.")
    counts = param.String(default="", doc="The page's presses per action so far, e.g. 'back:63,step:10'.")

    _template = '<div id="keys" class="gaplab-keys" style="display:none"></div>'

    _scripts = {"render": _RENDER, "remove": _REMOVE}

    def __init__(self, **params):
        super().__init__(**params)
        self._acted = {}      # action -> presses acted on
        self._n = 0
        self.param.watch(self._on_counts, "counts")

    def _on_counts(self, event):
        """One ``press`` per press of ``counts`` not yet acted on (a page reloaded starts its
        counts anew: a count below the one acted on restarts from it)."""
        for part in str(event.new).split(","):
            name, _, num = part.partition(":")
            if name not in set(KEYMAP.values()) or not num.isdigit():
                continue
            total = int(num)
            done = self._acted.get(name, 0)
            if total < done:
                done = 0
            for _ in range(total - done):
                self._n += 1
                self.press = f"{name}:{self._n}"
            self._acted[name] = total

    @staticmethod
    def action_of(press: str) -> str | None:
        """The action named by a ``press`` value (None if it names none)."""
        name = str(press).split(":", 1)[0]
        return name if name in set(KEYMAP.values()) else None
