"""How a session turns its solver into snapshots: the anatomy of the last step (described by
the model) and the immutable :class:`~gaplab.app.session.snapshot.Snapshot` the views draw."""
from __future__ import annotations

import math

import numpy as np

from .pictures import display_items, role_panels, takes_keyword
from .snapshot import RECENT_STEPS, Snapshot, StepInfo, _empty_snapshot, _frozen, nonuniformity
from .tracekeep import thin_points

#: single-step draws remembered for Back (iteration -> block, P(i), ĝᵢ before, unvisited blocks)
DRAWS_KEPT = 1024


class SessionPublisher:
    """Snapshots of the session's solver (a part of :class:`Session`; call with the lock held)."""

    # ------------------------------------------------------------------ snapshots
    def _set_status(self, status):
        self._status = status

    def _capture_last_step(self):
        s = self._solver
        recs = s.last_steps(1)
        if not recs:
            self._last_step = None
            return
        r = recs[-1]
        model = s.model
        i = r.block
        names = self._label_names()
        option = self._display_option
        truth = self._describe(model, i, model.ground_truth(i), names, option)
        fw = self._describe(model, i, r.fw_corner, names, option)
        away = self._describe(model, i, r.away_corner, names, option)
        image = truth.get("image")
        words = truth.get("words")
        err = next((x["error"] for x in (truth, fw, away) if x is not None and x.get("error")), None)
        if err is not None and err != self._display_error:
            self.notify(f"The model's pictures of block {i} are not drawn: {err}", "error")
        self._display_error = err
        note = truth.get("note") or (self._problem.block_note(i) if self._problem is not None else "")
        # on a cache hit the step's corner is the cache corner y^c (Alg. 5), not a max-oracle answer
        fw_name = "cache corner" if r.cache_hit else "FW corner"
        prob, gprev, unvisited = self._draw_seen(r)
        self._draw_p = None
        self._last_step = StepInfo.from_record(
            r, gap_after=s.block_gap_now(i), truth=truth["labels"], fw_corner=fw["labels"],
            away_corner=away["labels"] if away else None,
            panels=role_panels(truth, fw, away, fw_name), picker=truth["picker"], legend=truth["legend"],
            subtitle=truth["text"],
            image=_frozen(image) if image is not None else None,
            tokens=tuple(words) if words is not None and not isinstance(words, str) else None, note=note,
            probability=prob, sampling=str(self.sampling), gap_prev=gprev, unvisited=unvisited,
            cache_gap=self._cache_gap_at(r), box=bool(np.size(getattr(s.S, "lb", ()))))

    def _draw_seen(self, r) -> tuple:
        """(P(i) of the draw, the block's estimate ĝᵢ before it, the number of unvisited blocks)
        of the step of record ``r``, as captured before that step (a single Step, a replay of
        Back), else as remembered from when the step was first shown (so going back to a
        checkpoint's step, which is not replayed, says the same), else (NaN, NaN, -1)."""
        i = r.block
        if self._draw_p is not None and self._draw_p[0] == r.iteration:
            seen = (float(self._draw_p[1][i]), float(self._draw_p[2][i]),
                    int(np.count_nonzero(np.isposinf(self._draw_p[2]))))
            self._drawn[r.iteration] = (i, *seen)
            while len(self._drawn) > DRAWS_KEPT:
                del self._drawn[min(self._drawn)]
            return seen
        known = self._drawn.get(r.iteration)
        if known is not None and known[0] == i:
            return known[1:]
        return math.nan, math.nan, -1

    def _cache_gap_at(self, r) -> float:
        """The cache corner's gap g_i^c at the iterate of a cache-hit away step (Paper: Alg. 5
        line 8): its record keeps the away gap, so the state before the step is replayed from the
        history (short: a checkpoint is taken before every single Step). NaN for other steps,
        during a run, or when the history does not reach the step."""
        if not (r.cache_hit and r.kind == "away") or self.running:
            return math.nan
        try:
            pre = self._history.reach(int(r.iteration))
        except ValueError:
            return math.nan
        return pre.corner_gap(r.block, r.fw_corner)

    def set_display_option(self, name: str, value) -> None:
        """Make the reader's choice about the block's pictures (a model's ``picker``, e.g. the
        part whose score map is drawn): ``describe_block`` is called with ``name=value`` (when
        it takes that keyword); ``value`` None returns to the model's default. The last step is
        described again with it.

        Raises
        ------
        ValueError
            If ``value`` is not None or an index of the picker's options (when the last step has
            that picker)."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"name must be a non-empty str (a picker's name), got {name!r}")
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
                raise ValueError(f"value must be None or an int >= 0 (an index of the {name} picker's "
                                 f"options), got {value!r}")
            value = int(value)
        with self._lock:
            st = self._last_step
            pk = st.picker if st is not None else None
            if value is not None and pk is not None and pk["name"] == name and value >= len(pk["options"]):
                raise ValueError(f"value must lie in [0, {len(pk['options'])}) for the {name} picker, got {value}")
            option = None if value is None else (name, value)
            if option == self._display_option:
                return
            self._display_option = option
            if self._solver is not None and pk is not None:
                self._capture_last_step()
                self._publish()

    @staticmethod
    def _describe(model, i, y, names, option=None) -> dict | None:
        """What the anatomy shows of labelling y of block i, from ``model.describe_block(i, y)``
        (called with the reader's choice ``option`` = (name, value) when the model takes that
        keyword): ``labels`` (one display string per position: the model's ``label_text`` if it
        gives it, else the label names of its data), ``image``, ``words``, ``note``, ``text`` and
        the display entries (``panels``, ``picker``, ``legend``; gaplab.core.models.display).

        Display entries that do not fit the contract are left out (``error`` says why, naming
        the model)."""
        if y is None:
            return None
        d = None
        if option is not None and takes_keyword(model, option[0]):
            try:
                d = dict(model.describe_block(i, y, **{option[0]: option[1]}))
            except (ValueError, IndexError):   # the choice does not fit this model: its default
                d = None
        if d is None:
            d = dict(model.describe_block(i, y))
        if d.get("label_text") is not None:
            labels = tuple(str(t) for t in d["label_text"])
        else:
            ys = np.asarray(d.get("labels", y)).ravel()
            labels = tuple(names[int(k)] if names is not None else str(int(k)) for k in ys)
        try:
            shown = display_items(model, d)
        except (TypeError, ValueError) as exc:   # drawn without pictures; the session says why
            shown = {"panels": (), "picker": None, "legend": "", "error": str(exc)}
        out = {"labels": labels, "image": d.get("image"), "words": d.get("words"), "note": d.get("note", ""),
               "text": str(d.get("text", "")), **shown}
        img = out["image"]
        if img is not None and (np.asarray(img).dtype != np.uint8 or np.ndim(img) != 3):
            out["image"] = None
            out["error"] = (f"{getattr(model, 'name', type(model).__name__)}: describe_block's image must be "
                            f"uint8 of shape (L_i, h, w) (one picture per position), got "
                            f"{np.asarray(img).dtype} of shape {np.shape(img)}")
        return out

    def _label_names(self):
        model = self._solver.model
        data = getattr(model, "data", None)
        if getattr(data, "label_names", None) is not None:
            return data.label_names
        return getattr(model, "label_names", None)

    def _headline_metric(self, last) -> dict:
        """The problem's headline test metric (e.g. CoNLL's chunk F1) when it is not the test
        error: evaluated once per exact gap check, at the w current when the check is first
        published (the pass it was taken at is kept with it). Call with the lock held."""
        spec = getattr(self._problem, "spec", None)
        name = getattr(spec, "metric", "test error")
        if last is None or name == "test error" or self._problem.test is None:
            return {}
        key = (id(self._solver), last["oracle_calls"])
        cached = self._metric_cache
        if cached is None or cached[0] != key:
            s = self._solver
            try:
                value = spec.test_metric(self._problem.model, s.w, self._problem.test)[0]
            except Exception as exc:  # a metric that fails must not stop the solver's worker
                self.notify(f"Could not compute the {name}: {type(exc).__name__}: {exc}", "warning")
                value = math.nan
            cached = self._metric_cache = (key, float(value), float(s.effective_passes))
        return {"test_metric_name": name, "test_metric": cached[1], "test_metric_passes": cached[2]}

    def _publish(self):
        """Make a new immutable snapshot (call with the lock held)."""
        self._version += 1
        s = self._solver
        cfg = {k: getattr(self, k) for k in self.CONFIG_SETTINGS + ("dataset", "speed")}
        with self._msg_lock:
            mcount = len(self._messages)
        if s is None or self._problem is None:
            snap = _empty_snapshot(self.session_id, self.dataset, self._status, mcount, cfg)
            self._snapshot = Snapshot(**{**snap.__dict__, "version": self._version,
                                         "comparison": tuple(self._comparison),
                                         "note": self._note if self._status == "loading" else ""})
            return
        new = self._trace.fetch(s)   # kept bounded (TraceKeeper); the new ones all seen here
        for r in new:
            if r["kind"] == "gap_check":
                self._last_check = r
        n = s.n
        track = bool(s.track)
        active = _frozen(s.active_set_sizes()) if track else None
        caches = _frozen(s.cache_sizes()) if track else None
        if track:   # from α⁰ (pass 0) on: the active-set plot starts where the run starts
            hist_pt = (s.effective_passes, float(active.mean()), int(active.max()), float(caches.mean()))
            if not self._active_hist or self._active_hist[-1][0] != hist_pt[0]:
                self._active_hist.append(hist_pt)
                self._active_hist = thin_points(self._active_hist)
        # last exact check: periodic (trace) or manual, whichever is later
        checks = [r for r in (self._last_check, self._manual[-1] if self._manual else None) if r]
        last = max(checks, key=lambda r: r["oracle_calls"]) if checks else None
        exact_blocks = _frozen(s.exact_block_gaps[0]) if last is not None else None
        gaps = s.gap_estimates
        recent = s.last_steps(RECENT_STEPS)
        rs = np.array([(r.iteration, r.cache_hit, r.oracle_called) for r in recent], dtype=np.float64)
        rs = rs.reshape(-1, 3)
        self._snapshot = Snapshot(
            version=self._version, session_id=self.session_id, dataset=self._problem.name, n=n,
            lam=s.lam, label=self.run_label() + (f" · from {self._origin}" if self._origin else ""),
            status=self._status, message_count=mcount,
            iteration=s.iteration, effective_passes=s.effective_passes,
            oracle_calls=s.oracle_calls, cache_hits=int(s.step_counts()["cache_hit"]),
            solver_time_s=s.wall_time, steps_per_s=float(self._rate.rate), heuristic_gap=s.heuristic_gap,
            dual=s.dual_objective(),
            exact_gap=last["exact_gap"] if last else math.nan,
            exact_primal=last["primal"] if last else math.nan,
            exact_dual=last["dual"] if last else math.nan,
            exact_passes=last["effective_passes"] if last else math.nan,
            exact_test_error=last.get("test_error", math.nan) if last else math.nan,
            gap_estimates=_frozen(gaps), staleness=_frozen(s.staleness),
            probabilities=_frozen(s.sampling_probabilities()), exact_block_gaps=exact_blocks,
            exact_block_gaps_iteration=int(last["iteration"]) if last else -1,
            active_set_sizes=active, cache_sizes=caches, trace=self._trace.snapshot(),
            manual_checks=tuple(self._manual), active_history=tuple(self._active_hist),
            recent_steps=_frozen(rs), last_step=self._last_step, step_counts=s.step_counts(),
            has_test=self._problem.test is not None, tracks_atoms=track,
            chi_cubed=nonuniformity(gaps) ** 3, comparison=tuple(self._comparison), config=cfg,
            note=self._note if self._status == "loading" else "", origin=self._origin,
            switches=tuple(self._switches),
            history_from=-1 if self._history.earliest is None else int(self._history.earliest),
            **self._headline_metric(last))
