"""The problem registry and the settings schema: a problem registered once appears in the CLI
choices, the app's dataset picker and the warm-up plan; bad names are refused clearly; the CLI
options, the app's parameters and the estimator's parameters are the SolverConfig fields."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from gaplab.core.config import (SAMPLING_CHOICES, STEP_CHOICES, CacheConfig, Sampling, SolverConfig, StepKind,
                                config_from_settings, settings_schema)
from gaplab.core.problems import (ProblemOption, get_problem, load_problem, problem_names, register_problem,
                                  unregister_problem, warmup_plan)

TINY = "tiny-ocr5"


def _five_words(data_home=None):
    from gaplab.core.datasets.ocr import load_ocr
    train, test = load_ocr("small")
    return train.subset(range(5), name="ocr-5/train"), test.subset(range(5), name="ocr-5/test")


def _tiny_warm():
    from gaplab.core import ChainModel
    return ChainModel(_five_words()[0])


@pytest.fixture
def tiny():
    from gaplab.core import ChainModel
    spec = register_problem(TINY, _five_words, ChainModel, default_lam=0.5,
                            description="the first 5 words of OCR-small", warmup=_tiny_warm)
    yield spec
    unregister_problem(TINY)


# ------------------------------------------------------------------------------- registry
def test_builtin_problems_are_registered():
    assert problem_names()[:4] == ("ocr-small", "ocr-large", "toy", "conll2000")
    assert get_problem("conll2000").metric == "chunk F1" and get_problem("conll2000").higher_is_better
    assert not get_problem("conll2000").bundled and get_problem("ocr-small").bundled
    assert get_problem("toy").lam(n=40) == pytest.approx(1 / 40)


def test_registered_problem_loads_and_evaluates(tiny):
    p = load_problem(TINY)
    assert p.n == 5 and p.default_lam == 0.5 and p.spec is tiny
    w = np.zeros(p.model.d)
    value, details = tiny.test_metric(p.model, w, p.test)
    assert value == pytest.approx(p.model.error(w, p.test)) and details == {}


def test_registering_twice_is_an_error_unless_replace(tiny):
    from gaplab.core import ChainModel
    with pytest.raises(ValueError, match=f"{TINY}.*already registered.*replace=True"):
        register_problem(TINY, _five_words, ChainModel, default_lam=0.1, description="again")
    assert get_problem(TINY).default_lam == 0.5  # the first registration is untouched
    register_problem(TINY, _five_words, ChainModel, default_lam=0.1, description="again", replace=True)
    assert get_problem(TINY).default_lam == 0.1 and problem_names().count(TINY) == 1


def test_unknown_names_and_bad_registrations_are_refused_clearly():
    with pytest.raises(ValueError, match=r"unknown dataset 'ocr-smal'.*ocr-small, ocr-large, toy, conll2000"):
        get_problem("ocr-smal")
    with pytest.raises(ValueError, match="unknown dataset"):
        load_problem("nope")
    with pytest.raises(ValueError, match="lower-case"):
        register_problem("Bad Name", _five_words, default_lam=0.1, description="x")
    with pytest.raises(TypeError, match="loader must be callable"):
        register_problem("bad-loader", "not a function", default_lam=0.1, description="x")
    with pytest.raises(ValueError, match="default_lam"):
        register_problem("bad-lam", _five_words, default_lam=-1.0, description="x")
    assert "bad-lam" not in problem_names() and "bad-loader" not in problem_names()
    with pytest.raises(ValueError, match=r"toy.*option 'm'.*options: n, K"):
        get_problem("toy").parse_options({"m": 3})
    with pytest.raises(ValueError, match=r"option n must be in \[2, 1000\]"):
        get_problem("toy").parse_options({"n": 1})


def test_data_that_needs_files_says_how_to_install(tmp_path):
    spec = get_problem("conll2000")
    assert not spec.installed(tmp_path)
    assert "GAPLAB_DATA" in spec.install_hint(tmp_path)
    (tmp_path / "train.txt").write_text("Confidence NN B-NP\n\n")
    (tmp_path / "test.txt").write_text("He PRP B-NP\n\n")
    assert spec.installed(tmp_path)
    assert get_problem("ocr-small").installed()


# ------------------------------------------------------------------------------- everywhere
def test_registered_problem_appears_in_the_cli(tiny, capsys):
    from gaplab.cli import build_parser
    parser = build_parser()
    for cmd in ("train", "path", "grid"):
        sub = parser._subparsers._group_actions[0].choices[cmd]
        action = next(a for a in sub._actions if a.dest == "dataset")
        assert TINY in action.help, cmd
    args = parser.parse_args(["train", "--dataset", TINY])
    assert args.dataset == TINY
    from gaplab.cli import main
    assert main(["train", "--dataset", "no-such-problem"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown dataset 'no-such-problem'" in err[0]
    assert TINY in err[0] and "ocr-small" in err[0] and "register_problem" in err[0]


def test_registered_problem_trains_from_the_cli(tiny, tmp_path):
    import json

    from gaplab.cli import main
    out = tmp_path / "r.json"
    assert main(["train", "--dataset", TINY, "--max-passes", "2", "--gap-threshold", "0", "--quiet",
                 "--out", str(out)]) == 0
    r = json.loads(out.read_text())
    assert r["dataset"] == TINY and r["n"] == 5 and r["config"]["sampling"] == "gap"


def test_registered_problem_appears_in_the_app_picker(tiny):
    from gaplab.app.session import Session
    s = Session(load=False)
    try:
        assert TINY in s.param.dataset.objects
        s.dataset = TINY  # accepted by the Selector
    finally:
        s.close()


def test_registered_problem_options_become_app_parameters():
    from gaplab.app.session import Session
    register_problem("tiny-toy", lambda data_home=None, m=3: get_problem("toy").loader(n=m, K=2),
                     default_lam=lambda m: 1.0 / m, description="a toy with m objects", quick=True,
                     options={"m": ProblemOption(3, (2, 50), "m objects")})
    try:
        s = Session(dataset="tiny-toy", tiny_toy_m=4)
        try:
            assert s.wait_idle(30) and s.status == "idle", s.messages()
            assert s.snapshot.n == 4 and s.lam == pytest.approx(0.25)  # λ follows the problem's default
            assert s.param.tiny_toy_m.precedence >= 0 and s.param.toy_n.precedence < 0
            s.tiny_toy_m = 6  # a loader option reloads the problem
            assert s.wait_idle(30) and s.snapshot.n == 6 and s.lam == pytest.approx(1 / 6)
        finally:
            s.close()
    finally:
        unregister_problem("tiny-toy")


def test_registered_problem_is_warmed_up(tiny):
    plan = warmup_plan()
    by_class = {j.model_class: j for j in plan}
    assert TINY in by_class["ChainModel"].problems
    assert {"ocr-small", "ocr-large", "conll2000"} <= set(by_class["ChainModel"].problems)
    assert by_class["MulticlassModel"].problems == ("toy",)
    assert len(plan) == len({(j.model_class, j.oracle_tier) for j in plan})  # one compile per class
    # a problem whose model class nothing else uses gets a job of its own
    from gaplab.toy_examples.hard_easy import make_hard_easy

    class OtherModel(type(make_hard_easy(2, 1)[0])):
        pass

    register_problem("tiny-other", lambda data_home=None: (OtherModel([np.eye(2)] * 2, [np.array([0., 1])] * 2,
                                                                      [0, 0]), None),
                     default_lam=0.1, description="another model class",
                     warmup=lambda: OtherModel([np.eye(2)] * 2, [np.array([0., 1])] * 2, [0, 0]))
    try:
        assert ("tiny-other",) in [j.problems for j in warmup_plan()]
    finally:
        unregister_problem("tiny-other")


# ------------------------------------------------------------------------------- settings schema
def test_schema_covers_the_config_fields():
    keys = {s.key for s in settings_schema()}
    assert {"lam", "sampling", "gap_power", "step", "cache", "cache_factor", "cache_nu", "cache_size",
            "gap_check", "gap_threshold", "max_passes", "time_limit", "seed", "batch_step"} == keys
    cfg = SolverConfig()
    for s in settings_schema():  # every default is the dataclass default
        obj = cfg
        for part in s.path:
            obj = getattr(obj, part)
        assert (obj.name.lower() if isinstance(obj, (Sampling, StepKind)) else obj) == s.default, s.key
    # names of samplers / step kinds are the enums' (named once)
    assert STEP_CHOICES == tuple(m.name.lower() for m in StepKind)
    assert set(SAMPLING_CHOICES) == {"uniform", "permutation", "gap", "maxgap"}
    c = config_from_settings({"cache": True, "cache_factor": 0.5, "step": "pairwise"}, lam=0.2)
    assert c.cache == CacheConfig(enabled=True, factor=0.5) and c.step == StepKind.PAIRWISE and c.lam == 0.2
    with pytest.raises(ValueError, match="unknown setting.*'cache_facter'"):
        config_from_settings({"cache_facter": 0.5})


def test_cli_app_and_estimator_are_generated_from_the_schema():
    from gaplab.app.session import Session
    from gaplab.cli import build_parser
    from gaplab.core.estimator import SSVM
    train = build_parser()._subparsers._group_actions[0].choices["train"]
    dests = {a.dest: a for a in train._actions}
    for s in settings_schema():
        assert s.key in dests, s.key                       # every setting is a `gaplab train` option
        assert s.flag in dests[s.key].option_strings
        if s.choices is not None:
            assert list(dests[s.key].choices) == list(s.choices)
        assert s.key in SSVM().get_params()                # and an estimator parameter
        if s.app is not None:
            assert s.app in Session.param and Session.param[s.app].label == s.label
    assert dests["max_passes"].default == 1000 and dests["gap_threshold"].default == 1e-3  # CLI defaults
    assert list(Session.param.sampling.objects) == list(SAMPLING_CHOICES)
    assert list(Session.param.step_kind.objects) == list(STEP_CHOICES)
    # a new SolverConfig field with metadata would be found the same way: the schema follows fields()
    names = {f.name for f in dataclasses.fields(SolverConfig)} | {f"cache_{f.name}" for f in dataclasses.fields(CacheConfig)}
    assert {s.key if s.key != "cache" else "cache_enabled" for s in settings_schema()} <= names
    with pytest.raises(TypeError, match="unknown parameter.*'lamda'"):
        SSVM(lamda=1)
    assert SSVM(0.2, cache=True, cache_factor=0.5)._config().cache.factor == 0.5
    assert math.isinf(SSVM().get_params()["time_limit"])


# ------------------------------------------------------------------------------- step anatomy
def test_step_anatomy_draws_what_describe_block_gives(monkeypatch):
    from gaplab.app.session import Session
    s = Session(dataset="toy", toy_n=6, toy_K=3)
    try:
        assert s.wait_idle(30) and s.status == "idle", s.messages()
        s.step()
        st = s.snapshot.last_step
        assert st.note in ("hard object", "easy object")        # the problem's block_note (toy info)
        assert st.truth == ("0",) and st.image is None and st.tokens is None
        model = s.solver.model
        calls = []

        def describe(i, y):
            calls.append(i)
            return {"kind": "label", "text": "x", "labels": np.asarray(y), "label_text": (f"lab{int(y[0])}",),
                    "note": "from the model"}

        monkeypatch.setattr(model, "describe_block", describe)
        s.step()
        st = s.snapshot.last_step
        assert calls and set(calls) == {st.block}
        assert st.truth == ("lab0",) and st.note == "from the model"
        assert st.fw_corner[0].startswith("lab")
    finally:
        s.close()
