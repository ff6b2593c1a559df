"""Keyboard shortcuts of the presenter: space = Step, → = Step ×N, ← = back one step, r = Run/Pause,
p = projector mode.

A small Panel ``ReactiveHTML`` component adds one ``keydown`` listener to the page's document
(removed with the component). Keys typed into an input, a text area, a select or an editable
element are left alone, and so are keys with Ctrl, Alt or Meta.

Every press counts, within bounds. The page keeps a running count per action and sends them all
in ``counts`` (``"back:63,step:10"``). The server may merge several changes of one property
that arrive while it is busy into the last one (Panel applies the latest value of a property
once per batch), so a value per press would lose presses under load; the counts lose none:
the component compares them with the counts it has acted on and sets ``press`` once per action
with new presses, to ``"<action>:<n>:<count>"`` (``n`` a running number, so each is a new
value; ``count`` the presses of that action in this message). The app watches ``press`` and
calls the action once, with the count (steps go to the session's worker, presses of ← become
one jump back). Presses merged in one batch run grouped by action (their order across actions
within the batch is not kept).

``counts`` is client input: any page can set it to anything (OWASP's "never trust the client").
It is parsed strictly (at most :data:`MAX_COUNTS_LEN` characters, known actions only, each count
at most :data:`MAX_COUNT`), and no message acts on more presses than a person can make:
:data:`PRESS_CAPS` per action (a person presses at most ~30 keys a second; ← is capped at the
history's depth, as a jump back costs one replay whatever its length; r and p only toggle, so
only the parity of their presses matters). Presses beyond a cap are dropped, never deferred:
they are counted in ``dropped`` and reported to ``on_dropped`` (the app shows one notice per
message, not one per press).
"""
from __future__ import annotations

import json
import re

import param
from panel.reactive import ReactiveHTML

from .history import HISTORY_DEPTH

__all__ = ["KEYMAP", "KeyboardShortcuts", "KEY_HELP", "PRESS_CAPS", "MAX_COUNTS_LEN", "MAX_COUNT", "parse_counts"]

#: KeyboardEvent.key -> action name
KEYMAP = {" ": "step", "ArrowRight": "step_n", "ArrowLeft": "back", "r": "run", "R": "run",
          "p": "projector", "P": "projector"}

_ACTIONS = frozenset(KEYMAP.values())
#: actions that toggle (r = Run/Pause, p = projector): two presses cancel
TOGGLES = frozenset({"run", "projector"})
#: the most presses of an action one ``counts`` message acts on (a person presses at most ~30
#: keys a second; a jump back costs one replay of at most the history's depth; Step ×N takes N
#: steps per press in the worker)
PRESS_CAPS = {"step": 30, "step_n": 3, "back": HISTORY_DEPTH, "run": 1, "projector": 1}
#: the longest ``counts`` value read (five actions, nine digits each, fit in 80 characters)
MAX_COUNTS_LEN = 120
#: the largest running count accepted (a page open for days at 30 presses a second stays below)
MAX_COUNT = 10 ** 8

_DIGITS = re.compile(r"^[0-9]{1,9}$")

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
    (``"<action>:<n>:<count>"``, action one of ``KEYMAP``'s values, ``n`` a running number,
    ``count`` the presses it stands for: :meth:`count_of`, capped by :data:`PRESS_CAPS`)."""

    press = param.String(default="", doc="The last action, a running number and its presses, e.g. 'step:3:2'.")
    counts = param.String(default="", doc="The page's presses per action so far, e.g. 'back:63,step:10'.")

    _template = '<div id="keys" class="gaplab-keys" style="display:none"></div>'

    _scripts = {"render": _RENDER, "remove": _REMOVE}

    def __init__(self, **params):
        super().__init__(**params)
        self._acted = {}      # action -> presses acted on
        self._n = 0
        self.dropped = 0          # presses dropped so far (beyond PRESS_CAPS); not a synced property
        self.on_dropped = None    # called with the number dropped from one message
        self.param.watch(self._on_counts, "counts")

    def _on_counts(self, event):
        """One ``press`` per action with presses of ``counts`` not yet acted on, capped (a page
        reloaded starts its counts anew: a count below the one acted on restarts from it)."""
        new = parse_counts(event.new)
        if new is None:
            return
        dropped = 0
        for name in sorted(new):
            total = new[name]
            done = self._acted.get(name, 0)
            if total < done:
                done = 0
            delta = total - done
            self._acted[name] = total   # presses beyond the cap are dropped, never deferred
            if delta <= 0:
                continue
            take = min(delta, PRESS_CAPS[name])
            if name in TOGGLES:
                take = delta % 2       # an even number of toggles changes nothing
            dropped += delta - take if name not in TOGGLES else 0
            if take:
                self._n += 1
                self.press = f"{name}:{self._n}:{take}"
        if dropped:
            self.dropped += dropped
            if self.on_dropped is not None:
                self.on_dropped(dropped)

    @staticmethod
    def action_of(press: str) -> str | None:
        """The action named by a ``press`` value (None if it names none)."""
        name = str(press).split(":", 1)[0]
        return name if name in _ACTIONS else None

    @staticmethod
    def count_of(press: str) -> int:
        """How many presses a ``press`` value stands for (1 when it does not say; at most the
        action's cap)."""
        parts = str(press).split(":")
        name = parts[0]
        if name not in _ACTIONS:
            return 0
        if len(parts) < 3 or not _DIGITS.match(parts[2]):
            return 1
        return max(1, min(int(parts[2]), PRESS_CAPS[name]))


def parse_counts(text) -> dict | None:
    """``{action: count}`` of a ``counts`` value (``"back:63,step:10"``), or None when it is not
    one: longer than :data:`MAX_COUNTS_LEN`, a part that is not ``<known action>:<digits>``, an
    action named twice or a count above :data:`MAX_COUNT`. Never raises."""
    if not isinstance(text, str) or len(text) > MAX_COUNTS_LEN:
        return None
    if not text:
        return {}
    out = {}
    for part in text.split(","):
        name, sep, num = part.partition(":")
        if not sep or name not in _ACTIONS or name in out or not _DIGITS.match(num):
            return None
        if int(num) > MAX_COUNT:
            return None
        out[name] = int(num)
    return out
