"""Display adapters of the step anatomy: a segmentation block's overlays and a pose block's
skeletons, built from the dictionaries the models' ``describe_block`` returns."""
from __future__ import annotations

import numpy as np

from .snapshot import _frozen

def _takes_part(model) -> bool:
    """True if ``model.describe_block`` takes a ``part`` argument (the pose model)."""
    import inspect
    try:
        return "part" in inspect.signature(model.describe_block).parameters
    except (TypeError, ValueError):
        return False


def _pose_panels(truth, fw, away, part_names, fw_name="FW corner") -> dict | None:
    """For a pose block (``describe_block`` kind "pose"): ``G``, ``part`` (index), ``part_name``,
    ``part_names`` (every node's name, for the part picker), ``score_map`` (float64 (G, G), read
    only), ``edges`` (int64 (N − 1, 2) child-parent pairs) and ``skeletons``: (name, key, cells
    int64 (N, 2) as (x, y), loss) for the ground truth, the FW corner and the away corner (the
    away corner only when the step had one; ``fw_name`` names the FW corner: "cache corner" on a
    cache hit). None for other models."""
    if truth is None or "pose" not in truth:
        return None
    d = truth["pose"]
    sk = []
    for name, key, desc in (("ground truth", "truth", truth), (fw_name, "fw", fw), ("away corner", "away", away)):
        if desc is None or "pose" not in desc:
            continue
        sk.append((name, key, _frozen(np.asarray(desc["pose"]["skeleton"], dtype=np.int64)),
                   float(desc["pose"]["loss"])))
    N = len(sk[0][2])
    names = tuple(str(x) for x in part_names) if part_names is not None and len(part_names) == N \
        else tuple(str(p) for p in range(N))
    return {"G": int(d["G"]), "part": int(d["part"]), "part_name": str(d["part_name"]), "part_names": names,
            "score_map": _frozen(np.asarray(d["score_map"], dtype=np.float64)),
            "edges": _frozen(np.asarray(d["edges"], dtype=np.int64)), "skeletons": tuple(sk)}


_OVERLAY_COLORS = {"truth": (255, 200, 0), "fw": (0, 170, 255), "away": (255, 60, 160)}
#: the loss heat ramp: (t, RGB) stops, t = ω_p [y_p ≠ g_p] / max_p ω_p (light yellow → dark red)
_HEAT_STOPS = ((0.0, (255, 245, 140)), (0.5, (255, 140, 0)), (1.0, (170, 0, 0)))


def loss_heat(per, weight) -> np.ndarray:
    """RGB heat colours (float64 (V, 3)) of per-superpixel loss contributions ``per`` (float (V,),
    ω_p [y_p ≠ g_p]) on the scale of the image's largest loss weight ``max(weight)`` (ω_p: what
    superpixel p costs when wrong), and a mask (bool (V,)) of the superpixels that add loss."""
    per = np.asarray(per, dtype=np.float64)
    top = float(np.max(weight)) if np.size(weight) else 0.0
    t = np.clip(per / top, 0.0, 1.0) if top > 0 else np.zeros_like(per)
    ts = np.array([p for p, _ in _HEAT_STOPS])
    cols = np.array([c for _, c in _HEAT_STOPS], dtype=np.float64)
    rgb = np.stack([np.interp(t, ts, cols[:, k]) for k in range(3)], axis=1)
    return rgb, per > 0


def _mask_overlays(truth, fw, away, fw_name="FW corner") -> tuple | None:
    """For a segmentation block (``describe_block`` kind "mask"): (name, uint8 (H, W, 3)) pairs:
    the photo with its superpixel borders, then the ground truth, the FW corner and the away
    corner as coloured overlays (foreground tinted, wrong superpixels darkened), then the FW
    corner's per-superpixel loss as a heat map over the grey photo (each wrong superpixel filled
    with the colour of ω_p [y_p ≠ g_p] on the scale 0 … max_p ω_p, see :func:`loss_heat`; the
    name gives the sum, L_i(y*), and the scale; ``fw_name`` names the FW corner: "cache corner" on
    a cache hit). None otherwise."""
    if truth is None or "mask" not in truth:
        return None
    d = truth["mask"]
    photo = d.get("photo")
    base = (np.asarray(photo, dtype=np.float64) if photo is not None
            else np.full(d["superpixels"].shape + (3,), 128.0))
    gt = np.asarray(d["truth"], dtype=bool)
    first = base.copy()
    first[np.asarray(d["boundaries"], dtype=bool)] = (255, 255, 0)
    out = [("photo and superpixels", first)]
    for name, key, desc in (("ground truth", "truth", truth), (fw_name, "fw", fw), ("away corner", "away", away)):
        if desc is None or "mask" not in desc:
            continue
        m = np.asarray(desc["mask"]["mask"], dtype=bool)
        img = 0.55 * base
        img[m] = 0.45 * base[m] + 0.55 * np.array(_OVERLAY_COLORS[key], dtype=np.float64)
        if key != "truth":
            wrong = m != gt
            img[wrong] *= 0.5
            name = f"{name} (loss {float(np.sum(desc['mask']['loss_per_superpixel'])):.3f})"
        out.append((name, img))
    fd = fw.get("mask") if fw is not None else None
    if fd is not None and fd.get("loss_per_superpixel") is not None and fd.get("loss_weight") is not None:
        per = np.asarray(fd["loss_per_superpixel"], dtype=np.float64)
        rgb, wrong = loss_heat(per, fd["loss_weight"])
        seg = np.asarray(d["superpixels"])
        grey = base.mean(axis=2, keepdims=True) * np.ones(3)
        img = 0.35 * grey + 60.0
        px = wrong[seg]
        img[px] = rgb[seg[px]]
        img[np.asarray(d["boundaries"], dtype=bool) & px] *= 0.6
        out.append((f"{fw_name} loss per superpixel (Σ {per.sum():.3f}; red {float(np.max(fd['loss_weight'])):.3f})",
                    img))
    return tuple((name, _frozen(np.clip(img, 0, 255).astype(np.uint8))) for name, img in out)
