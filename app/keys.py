"""Keyboard shortcuts of the presenter: space = Step, → = Step ×N, ← = back one step, r = Run/Pause,
p = projector mode.

A small Panel ``ReactiveHTML`` component adds one ``keydown`` listener to the page's document
(removed with the component). Keys typed into an input, a text area, a select or an editable
element are left alone, and so are keys with Ctrl, Alt or Meta. A recognised key sets the
``press`` parameter to ``"<action>:<count>"`` (the count makes a repeated key a new value); the
app watches it and calls the action.
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
let count = 0;
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
  count += 1;
  data.press = action + ':' + count;
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

    _template = '<div id="keys" class="gaplab-keys" style="display:none"></div>'

    _scripts = {"render": _RENDER, "remove": _REMOVE}

    @staticmethod
    def action_of(press: str) -> str | None:
        """The action named by a ``press`` value (None if it names none)."""
        name = str(press).split(":", 1)[0]
        return name if name in set(KEYMAP.values()) else None
