"""The anatomy's pictures of a block, built from what the model describes (the display contract
of :mod:`gaplab.core.models.display`): the model's panels for the ground truth, the FW corner
and the away corner, composited (a labelling's region tinted in its colour, its wrong pixels
darkened) and ready to draw. Nothing here knows a model's kind."""
from __future__ import annotations

import inspect

import numpy as np

from gaplab.core.models.display import check_panels, check_picker

from .snapshot import _frozen

#: the labellings' colours (RGB): ground truth, the step's corner (FW or cache), away corner
ROLE_COLORS = {"truth": (255, 200, 0), "fw": (0, 170, 255), "away": (255, 60, 160)}


def takes_keyword(model, name: str) -> bool:
    """True if ``model.describe_block`` takes the keyword ``name`` (a picker's choice)."""
    try:
        return name in inspect.signature(model.describe_block).parameters
    except (TypeError, ValueError):
        return False


def display_items(model, d: dict) -> dict:
    """The checked display entries of one description: ``panels`` (tuple), ``picker`` (dict or
    None) and ``legend`` (str)."""
    name = getattr(model, "name", None) or type(model).__name__
    return {"panels": check_panels(d.get("panels"), name), "picker": check_picker(d.get("picker"), name),
            "legend": str(d.get("legend") or "")}


def _composite(panel, key) -> np.ndarray:
    """The panel's image as uint8 RGB with the labelling's region tinted in its colour and its
    wrong pixels darkened (the ground truth's never are)."""
    img = np.asarray(panel["image"], dtype=np.float64)
    if img.ndim == 2:
        img = np.repeat(img[:, :, None], 3, axis=2)
    region, wrong = panel["region"], panel["wrong"]
    if region is None and wrong is None:
        return np.asarray(panel["image"])
    base = img
    if region is not None:
        img = 0.55 * base
        img[region] = 0.45 * base[region] + 0.55 * np.array(ROLE_COLORS[key], dtype=np.float64)
    if wrong is not None and key != "truth":
        img = img.copy() if img is base else img
        img[wrong] *= 0.5
    return np.clip(img, 0, 255).astype(np.uint8)


def role_panels(truth, fw, away, fw_name: str = "FW corner") -> tuple | None:
    """The anatomy's pictures: (key, caption, panel) for the ground truth's ``input`` panels
    (key "input", shown once), then every labelling's own panels (key "truth", "fw", "away";
    ``fw_name`` names the step's corner: "cache corner" on a cache hit). A panel's ``image`` is
    composited (see :func:`_composite`); a corner's panel with points gets ``under``: the ground
    truth's points of the same panel (drawn dashed beneath). None if the model gives no panels."""
    if truth is None or not truth.get("panels"):
        return None
    names = {"truth": "ground truth", "fw": fw_name, "away": "away corner"}
    out = [("input", p["caption"].replace("{who}", names["truth"]), p) for p in truth["panels"] if p["input"]]
    truth_own = [p for p in truth["panels"] if not p["input"]]
    for key, desc in (("truth", truth), ("fw", fw), ("away", away)):
        if desc is None:
            continue
        own = [p for p in desc["panels"] if not p["input"]]
        for k, p in enumerate(own):
            cap = p["caption"]
            cap = cap.replace("{who}", names[key]) if "{who}" in cap else (
                f"{names[key]}: {cap}" if cap else names[key])
            q = dict(p, image=_frozen(_composite(p, key)), region=None, wrong=None, under=None)
            if key != "truth" and p["points"] is not None and k < len(truth_own) \
                    and truth_own[k]["points"] is not None:
                q["under"] = truth_own[k]["points"]
            out.append((key, cap, q))
    return tuple(out)
