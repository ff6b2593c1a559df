"""The display contract of a model: what ``describe_block(i, y)`` may give the app to draw.

The app's step anatomy shows a block's ground truth, its FW corner and its away corner. For each
of these labellings it calls ``model.describe_block(i, y)`` and draws what the model describes,
without knowing the model's kind:

* ``"labels"`` or ``"label_text"``: one entry per position of y, drawn as rows of tokens (the
  ground truth's row, the corners' rows coloured where they differ from it);
* ``"panels"``: a list of pictures (made with :func:`image_panel`), each an 8-bit image with a
  caption and optionally what the labelling marks on it: a region (pixels tinted in the
  labelling's colour), the pixels it gets wrong (darkened), points joined by segments (a
  skeleton) with one point ringed. A panel marked ``input`` does not depend on y (the photo):
  the app shows it once, before the labellings' panels. A corner's points are drawn over the
  ground truth's points of the same panel (thin, dashed);
* ``"picker"``: a choice the reader can make about the picture (:func:`picker`, e.g. the part
  whose score map is shown); the app offers it and calls ``describe_block(i, y, **{name: v})``.

A caption may contain ``{who}``: the app puts the labelling's name there ("ground truth", "FW
corner", "cache corner", "away corner"); a caption without it is prefixed with that name.
"""
from __future__ import annotations

import numpy as np

__all__ = ["image_panel", "picker", "check_panels", "check_picker", "region_heat_map", "PANEL_KINDS"]

#: the kinds of display items the app draws
PANEL_KINDS = ("image",)


def _frozen(a, dtype=None):
    a = np.array(a, dtype=dtype, copy=True)
    a.setflags(write=False)
    return a


def _mask(value, shape, field):
    if value is None:
        return None
    m = np.asarray(value)
    if m.shape != shape or m.dtype != np.bool_:
        raise ValueError(f"panel {field} must be a bool array of shape {shape} (the image's height and "
                         f"width), got {m.dtype} of shape {m.shape}")
    return _frozen(m)


def image_panel(image, caption: str = "", *, input: bool = False, region=None, wrong=None, points=None,
                segments=None, mark=None, pixelated: bool = False) -> dict:
    """One picture of a labelling for the app (see the module docstring).

    Parameters
    ----------
    image : array_like, uint8 of shape (H, W) (grey) or (H, W, 3) (RGB)
        The picture.
    caption : str
        Under the picture; ``{who}`` is replaced by the labelling's name.
    input : bool
        True if the picture does not depend on the labelling (shown once).
    region, wrong : array_like, bool of shape (H, W), optional
        Pixels the labelling marks (tinted in its colour) and pixels where it differs from the
        ground truth (darkened).
    points : array_like, float of shape (P, 2), optional
        Points as (x, y) in pixel units (a pixel's centre is at +0.5).
    segments : array_like, int of shape (S, 2), optional
        Pairs of point indices joined by a line.
    mark : int, optional
        Index of a point drawn with a ring.
    pixelated : bool
        Scale the picture up without smoothing (small images).

    Returns
    -------
    dict
        ``{"kind": "image", ...}`` with read-only arrays.

    Raises
    ------
    ValueError
        If an array has the wrong dtype or shape, or an index is out of range.
    """
    img = np.asarray(image)
    if img.dtype != np.uint8 or not (img.ndim == 2 or (img.ndim == 3 and img.shape[2] == 3)) or img.size == 0:
        raise ValueError(f"panel image must be uint8 of shape (H, W) or (H, W, 3), got {img.dtype} of "
                         f"shape {img.shape}")
    hw = img.shape[:2]
    out = {"kind": "image", "image": _frozen(img), "caption": str(caption), "input": bool(input),
           "region": _mask(region, hw, "region"), "wrong": _mask(wrong, hw, "wrong"),
           "points": None, "segments": None, "mark": None, "pixelated": bool(pixelated)}
    if points is not None:
        p = np.asarray(points, dtype=np.float64)
        if p.ndim != 2 or p.shape[1] != 2 or not np.all(np.isfinite(p)):
            raise ValueError(f"panel points must be finite floats of shape (P, 2) as (x, y), got shape {p.shape}")
        out["points"] = _frozen(p)
        if segments is not None:
            s = np.asarray(segments)
            if s.size == 0:
                s = np.zeros((0, 2), np.int64)
            if s.ndim != 2 or s.shape[1] != 2 or s.dtype.kind not in "iu" or (s.size and (s.min() < 0 or s.max() >= len(p))):
                raise ValueError(f"panel segments must be int pairs of point indices in [0, {len(p)}) of shape "
                                 f"(S, 2), got {s.dtype} of shape {s.shape}")
            out["segments"] = _frozen(s, np.int64)
        if mark is not None:
            if isinstance(mark, bool) or not isinstance(mark, (int, np.integer)) or not 0 <= int(mark) < len(p):
                raise ValueError(f"panel mark must be a point index in [0, {len(p)}), got {mark!r}")
            out["mark"] = int(mark)
    elif segments is not None or mark is not None:
        raise ValueError("panel segments and mark need points")
    return out


def check_panels(panels, model: str = "model") -> tuple:
    """The ``"panels"`` of a description, checked (a tuple of :func:`image_panel` dicts).

    Raises
    ------
    TypeError
        If ``panels`` is not a list or tuple of dicts.
    ValueError
        If a panel's kind is unknown or its arrays do not fit (naming the model and the panel).
    """
    if panels is None:
        return ()
    if not isinstance(panels, (list, tuple)):
        raise TypeError(f"{model}: describe_block's panels must be a list of dicts, got {type(panels).__name__}")
    out = []
    for k, p in enumerate(panels):
        if not isinstance(p, dict):
            raise TypeError(f"{model}: panel {k} must be a dict (see image_panel), got {type(p).__name__}")
        if p.get("kind") not in PANEL_KINDS:
            raise ValueError(f"{model}: panel {k} has kind {p.get('kind')!r}; the app draws {PANEL_KINDS}")
        try:
            out.append(image_panel(p["image"], p.get("caption", ""), input=p.get("input", False),
                                   region=p.get("region"), wrong=p.get("wrong"), points=p.get("points"),
                                   segments=p.get("segments"), mark=p.get("mark"),
                                   pixelated=p.get("pixelated", False)))
        except (KeyError, ValueError) as exc:
            raise ValueError(f"{model}: panel {k}: {exc}") from None
    return tuple(out)


def picker(name: str, label: str, options, value) -> dict:
    """A choice the reader can make about a block's picture: ``describe_block`` takes the
    keyword ``name``; ``options`` are the values' names (value k is ``options[k]``), ``value``
    the one drawn.

    Raises
    ------
    ValueError
        If ``value`` is not an index of ``options``.
    """
    opts = tuple(str(o) for o in options)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= int(value) < len(opts):
        raise ValueError(f"picker value must be an index in [0, {len(opts)}), got {value!r}")
    return {"name": str(name), "label": str(label), "options": opts, "value": int(value)}


def check_picker(p, model: str = "model") -> dict | None:
    """A description's ``"picker"``, checked (None if it has none)."""
    if p is None:
        return None
    if not isinstance(p, dict) or not {"name", "label", "options", "value"} <= set(p):
        raise ValueError(f"{model}: describe_block's picker must be a dict with name, label, options and "
                         f"value (see picker), got {p!r:.80}")
    try:
        return picker(p["name"], p["label"], p["options"], p["value"])
    except ValueError as exc:
        raise ValueError(f"{model}: {exc}") from None


def region_heat_map(base, regions, values, top: float, borders=None) -> np.ndarray:
    """A heat map of per-region values over a greyed photo, for an image panel.

    Parameters
    ----------
    base : float or uint8 array (H, W, 3)
        The photo (RGB, 0-255).
    regions : int array (H, W)
        The region (e.g. superpixel) index of every pixel, in [0, len(values)).
    values : float64 array (R,)
        One value per region; regions with value 0 show the greyed photo.
    top : float
        The value drawn dark red (values are clipped to [0, top]); light yellow is 0.
    borders : bool array (H, W), optional
        Region borders, darkened where a region is coloured.

    Returns
    -------
    uint8 array (H, W, 3)
    """
    values = np.asarray(values, dtype=np.float64)
    t = np.clip(values / top, 0.0, 1.0) if top > 0 else np.zeros_like(values)
    stops = ((0.0, (255, 245, 140)), (0.5, (255, 140, 0)), (1.0, (170, 0, 0)))  # yellow → red
    ts, cols = np.array([q for q, _ in stops]), np.array([c for _, c in stops], dtype=np.float64)
    rgb = np.stack([np.interp(t, ts, cols[:, k]) for k in range(3)], axis=1)
    base = np.asarray(base, dtype=np.float64)
    img = 0.35 * (base.mean(axis=2, keepdims=True) * np.ones(3)) + 60.0
    px = (values > 0)[regions]
    img[px] = rgb[regions[px]]
    if borders is not None:
        img[borders & px] *= 0.6
    return np.clip(img, 0, 255).astype(np.uint8)
