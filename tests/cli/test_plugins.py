"""Plugins: a package that declares a ``gaplab.problems`` entry point puts its problems in
``gaplab train`` (to a certified gap), the app's problem list, ``gaplab warmup`` and sweeps with no
wrapper script, and its model fits through ``SSVM(model=...)``; ``check_model`` catches the loss
bug planted in it and training the buggy model ends ``oracle_not_exact`` with one line;
``--import`` takes a local .py file or a module name (a sweep's worker processes import it too);
an unknown ``--dataset`` names the registered problems and says how to add one.

The package is written by the test into a temporary directory with a ``.dist-info`` (METADATA and
entry_points.txt) beside it, which is what ``pip install`` leaves in site-packages; putting that
directory on PYTHONPATH makes ``importlib.metadata`` find the entry point as for an installed
package."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from cli_runs import ENV

# A 3-label chain with brute-force inference: the newcomer's model of the issue (45 lines).
PLUGIN = '''
"""chain3: a 3-label chain of 4 tokens, brute-force inference (a gaplab plugin)."""
import itertools

import numpy as np

from gaplab.core.models import Examples, PythonModel
from gaplab.core.problems import register_problem


class Chain3:
    """ψ(x, y) = (Σ_t x_t ⊗ e_{y_t}, transition counts), mean Hamming loss, brute force."""
    n_labels = 3

    def __init__(self, n_features=5, length=4):
        self.F, self.T = n_features, length
        self.size_joint_feature = 3 * n_features + 9
        self.all_y = np.array(list(itertools.product(range(3), repeat=length)))

    def joint_feature(self, x, y):
        unary = np.zeros((3, self.F))
        np.add.at(unary, y, x)
        trans = np.zeros((3, 3))
        np.add.at(trans, (y[:-1], y[1:]), 1.0)
        return np.concatenate([unary.ravel(), trans.ravel()])

    def loss(self, y, y_hat):
        return float(np.mean(y != y_hat))

    def _scores(self, x, w):
        U = x @ w[:3 * self.F].reshape(3, self.F).T
        P = w[3 * self.F:].reshape(3, 3)
        Y = self.all_y
        return U[np.arange(self.T), Y].sum(axis=1) + P[Y[:, :-1], Y[:, 1:]].sum(axis=1)

    def inference(self, x, w):
        return self.all_y[np.argmax(self._scores(x, w))]

    def loss_augmented_inference(self, x, y, w):
        return self.all_y[np.argmax(self._scores(x, w) + np.mean(self.all_y != y, axis=1))]


class Chain3IgnoresLoss(Chain3):
    """The planted bug: the max oracle forgets the loss."""

    def loss_augmented_inference(self, x, y, w):
        return self.inference(x, w)


def make(n, seed):
    centers = np.random.default_rng(0).normal(size=(3, 5))  # one distribution, train and test
    rng = np.random.default_rng(seed)
    Y = [rng.integers(0, 3, size=4) for _ in range(n)]
    X = [centers[y] + 0.8 * rng.normal(size=(4, 5)) for y in Y]
    return Examples(X, Y, name=f"chain3-{seed}")


def load(data_home=None, n=40):
    return make(n, 0), make(n, 1)


def register():
    register_problem("chain3", load, lambda train: PythonModel(Chain3(), train), default_lam=0.1,
                     description="a 3-label chain (plugin)", quick=True,
                     warmup=lambda: PythonModel(Chain3(), make(3, 2)))
    register_problem("chain3-ignores-loss", load, lambda train: PythonModel(Chain3IgnoresLoss(), train),
                     default_lam=0.1, description="the same chain, its oracle forgets the loss", quick=True)
'''


@pytest.fixture
def site(tmp_path):
    """A directory with the chain3 plugin package and its dist-info (as pip installs it), and the
    environment that puts it on the path of a child process."""
    root = tmp_path / "site"
    (root / "chain3_plugin").mkdir(parents=True)
    (root / "chain3_plugin" / "__init__.py").write_text(PLUGIN)
    info = root / "chain3_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: chain3-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[gaplab.problems]\nchain3 = chain3_plugin:register\n")
    env = dict(ENV, PYTHONPATH=os.pathsep.join([str(root), ENV["PYTHONPATH"]]))
    return root, env


def _gaplab(env, *args, cwd=None, timeout=600):
    return subprocess.run([sys.executable, "-m", "gaplab", *map(str, args)], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=timeout)


def test_an_installed_plugin_trains_from_the_cli_to_a_certified_gap(site, tmp_path):
    _, env = site
    out = tmp_path / "r.json"
    r = _gaplab(env, "train", "--dataset", "chain3", "--gap-threshold", "1e-3", "--out", out)
    assert r.returncode == 0, r.stderr
    res = json.loads(out.read_text())
    assert res["status"] == "converged" and 0 <= res["exact_gap"] <= 1e-3 and res["not_exact"] is None
    assert "chain3" in _gaplab(env, "train", "--help").stdout


def test_the_planted_loss_bug_ends_oracle_not_exact_with_one_line(site):
    _, env = site
    r = _gaplab(env, "train", "--dataset", "chain3-ignores-loss", "--gap-threshold", "1e-3")
    assert r.returncode == 2
    assert "oracle_not_exact" in r.stdout and "converged" not in r.stdout
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("gaplab train: error: the max oracle is not exact")
    assert "block" in err[0] and "scores" in err[0] and "check_model" in err[0]


def test_the_plugin_is_in_the_app_and_check_model_catches_its_bug(site):
    _, env = site
    script = textwrap.dedent('''
        from gaplab.app.settings import installed_problems
        from gaplab.app.session import Session
        from gaplab.core.models import ModelCheckError, check_model
        from gaplab.core.problems import get_problem, warmup_plan
        assert "chain3" in installed_problems() and "chain3-ignores-loss" in installed_problems()
        from gaplab.core.sweep.spec import parse_dataset
        assert parse_dataset("chain3").problem == "chain3"   # a sweep spec's datasets
        assert any("chain3" in job.problems for job in warmup_plan())
        s = Session(dataset="chain3")
        assert s.wait_idle(300) and s.status == "idle", s.messages()
        s.step_n(40)
        assert s.wait_idle(300) and s.solver.iteration == 40
        s.close()
        print(check_model(get_problem("chain3").load().model))
        try:
            check_model(get_problem("chain3-ignores-loss").load().model)
        except ModelCheckError as exc:
            print("CAUGHT", exc)
    ''')
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "never beaten" in r.stdout
    caught = [ln for ln in r.stdout.splitlines() if ln.startswith("CAUGHT")]
    assert caught and "max oracle's labelling" in caught[0]


def test_the_plugin_model_fits_through_the_estimator(site):
    """``SSVM(model=Chain3())`` fits the installed plugin's model to a certified gap; ``predict`` is
    the argmax of ⟨w, ψ(x, y)⟩ over all 81 labellings (from ``joint_feature``, not the plugin's own
    scoring); ``score`` is the per-token accuracy of those predictions. Fitting the planted
    loss bug ends ``oracle_not_exact`` with an OracleNotExactWarning."""
    _, env = site
    script = textwrap.dedent('''
        import json
        import numpy as np
        from sklearn.base import clone
        from chain3_plugin import Chain3, load
        from gaplab.core.estimator import SSVM
        train, test = load()
        est = SSVM(lam=0.1, model=Chain3(), gap_threshold=1e-3, max_passes=500, seed=0)
        assert isinstance(clone(est).get_params()["model"], Chain3)
        est.fit(train.X, train.Y)
        m = Chain3()
        brute = [m.all_y[np.argmax([est.coef_ @ m.joint_feature(x, y) for y in m.all_y])] for x in test.X]
        pred = est.predict(test.X)
        hits = np.concatenate([p == y for p, y in zip(pred, test.Y)])
        print(json.dumps({"status": est.result_.status.name, "gap": est.dual_gap_, "d": est.coef_.shape[0],
                          "argmax": all(np.array_equal(p, b) for p, b in zip(pred, brute)),
                          "score": est.score(test.X, test.Y), "hits": float(hits.mean()),
                          "train_score": est.score(train.X, train.Y)}))
        import warnings
        from chain3_plugin import Chain3IgnoresLoss
        from gaplab.core.estimator import OracleNotExactWarning
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            bad = SSVM(lam=0.1, model=Chain3IgnoresLoss(), gap_threshold=1e-3, max_passes=500, seed=0)
            bad.fit(train.X, train.Y)
        said = [str(c.message) for c in caught if issubclass(c.category, OracleNotExactWarning)]
        print(json.dumps({"status": bad.result_.status.name, "gap": bad.dual_gap_, "said": said}))
    ''')
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    out, bad = (json.loads(line) for line in r.stdout.strip().splitlines()[-2:])
    assert out["status"] == "CONVERGED" and 0 <= out["gap"] <= 1e-3 and out["d"] == 3 * 5 + 9
    assert out["argmax"]
    assert out["score"] == out["hits"]
    assert out["score"] > 0.6 and out["train_score"] > 0.6  # 3 labels: chance is 1/3
    # the planted loss bug: never converged, and the fit says why
    assert bad["status"] == "ORACLE_NOT_EXACT" and bad["gap"] < 0
    assert len(bad["said"]) == 1 and "the max oracle is not exact" in bad["said"][0]


def _local_problem_file(path, name: str):
    """A user's local file (``path``) that registers the plugin's chain as problem ``name``."""
    path.parent.mkdir()
    path.write_text("from chain3_plugin import Chain3, load\nfrom gaplab.core.models import PythonModel\n"
                    "from gaplab.core.problems import register_problem\n"
                    f"register_problem({name!r}, load, lambda t: PythonModel(Chain3(), t), default_lam=0.1,\n"
                    "                 description='from a local file', quick=True)\n")
    return path


def test_import_a_local_file_or_a_module(site, tmp_path):
    root, env = site
    local = _local_problem_file(tmp_path / "work" / "my_chain.py", "my-chain")
    r = _gaplab(env, "train", "--import", local, "--dataset", "my-chain", "--max-passes", "3",
                "--gap-threshold", "0", "--quiet")
    assert r.returncode == 0, r.stderr
    r = _gaplab(env, "train", "--import", "my_chain", "--dataset", "my-chain", "--max-passes", "3",
                "--gap-threshold", "0", "--quiet", cwd=tmp_path)
    assert r.returncode == 2 and "--import my_chain: ModuleNotFoundError" in r.stderr  # not on the path
    assert len(r.stderr.strip().splitlines()) == 1
    env2 = dict(env, PYTHONPATH=os.pathsep.join([str(local.parent), env["PYTHONPATH"]]))
    r = _gaplab(env2, "train", "--import=my_chain", "--dataset", "my-chain", "--max-passes", "3",
                "--gap-threshold", "0", "--quiet")
    assert r.returncode == 0, r.stderr


def test_sweep_imports_a_local_file_in_every_worker_process(site, tmp_path):
    """``gaplab sweep --import FILE``: the problem the file registers is known to the spec and is
    run by a LocalCluster worker, a process of its own that imports the file itself."""
    _, env = site
    local = _local_problem_file(tmp_path / "work" / "sweep_chain.py", "sweep-chain")
    spec = tmp_path / "spec.toml"
    spec.write_text('name = "plugin"\ndatasets = ["sweep-chain"]\nlams = [0.1]\nseeds = 1\n'
                    '[budgets.laptop]\nmax_passes = 3\ngap_check = 1\n[methods.bcfw]\nsampling = "uniform"\n')
    store = tmp_path / "store"
    r = _gaplab(env, "sweep", spec, "--store", store, "--workers", "0", "--dry-run")
    assert r.returncode == 2 and "unknown dataset 'sweep-chain'" in r.stderr  # without --import
    cli = subprocess.Popen([sys.executable, "-m", "gaplab", "sweep", str(spec), "--store", str(store),
                            "--import", "work/sweep_chain.py", "--workers", "1", "--quiet"],
                           cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = cli.communicate(timeout=900)
    assert cli.returncode == 0, err[-3000:]
    manifest = json.loads((store / "manifest.json").read_text())
    (entry,) = manifest["runs"].values()
    assert entry["status"] == "done" and entry["config"]["dataset"] == "sweep-chain"
    assert entry["pid"] != cli.pid and entry["summary"]["effective_passes"] > 0  # ran in the worker


def test_an_unknown_dataset_names_the_problems_and_how_to_add_one(site, tmp_path):
    _, env = site
    r = _gaplab(env, "train", "--dataset", "chain4")
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1
    for word in ("unknown dataset 'chain4'", "chain3", "ocr-small", "register_problem", "--import",
                 "gaplab.problems"):
        assert word in lines[0]
    r = _gaplab(env, "train", "--import", tmp_path / "missing.py", "--dataset", "chain3")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "no such file" in r.stderr


def test_a_broken_plugin_is_reported_and_the_others_still_load(site):
    root, env = site
    (root / "broken_plugin-0.1.dist-info").mkdir()
    (root / "broken_plugin-0.1.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: broken\nVersion: 0.1\n")
    (root / "broken_plugin-0.1.dist-info" / "entry_points.txt").write_text(
        "[gaplab.problems]\nbroken = no_such_module_xyz:register\n")
    script = ("import warnings\nfrom gaplab.core.problems import problem_names, plugin_errors\n"
              "with warnings.catch_warnings(record=True) as w:\n    warnings.simplefilter('always')\n"
              "    names = problem_names()\nprint('chain3' in names, len(plugin_errors()), len(w))\n"
              "print(plugin_errors()[0])\n")
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    first, second = r.stdout.strip().splitlines()
    assert first == "True 1 1" and "broken" in second and "no_such_module_xyz" in second


def test_warmup_compiles_a_registered_plugin_model_ahead(site):
    _, env = site
    r = _gaplab(env, "warmup", "--dataset", "chain3", timeout=1200)
    assert r.returncode == 0, r.stderr
    assert "PythonModel (python): chain3" in r.stdout and "compiled the numba kernels" in r.stdout
    r = _gaplab(env, "warmup", "--dataset", "no-such")
    assert r.returncode == 2 and "unknown dataset 'no-such'" in r.stderr


def test_a_long_compile_is_announced_and_timed(capsys):
    """The note on stderr once a compile has lasted AFTER_S, and its length at the end."""
    import time

    from gaplab.cli.train import _CompileNote
    from gaplab.core.models import PythonModel
    from gaplab.toy_examples.multilabel import MultiLabel, make_multilabel

    class FakeSolver:
        model = PythonModel(MultiLabel(8, 4), make_multilabel(3))

    note = _CompileNote(FakeSolver(), quiet=False)
    note.AFTER_S = 0.01
    note.event(True)
    t0 = time.monotonic()
    while not note.said and time.monotonic() - t0 < 30:  # a hang guard, not a timing assertion
        time.sleep(0.01)
    note.event(False)
    note.done(42.0)
    err = capsys.readouterr().err
    assert "compiling the solver's numba kernels for the model kind 'dense' (PythonModel)" in err
    assert "in 42.0 s" in err and "gaplab warmup --dataset" in err
    quiet = _CompileNote(FakeSolver(), quiet=True)
    quiet.event(True)
    quiet.done(42.0)
    assert capsys.readouterr().err == ""


def test_path_and_grid_of_the_buggy_plugin_certify_nothing_and_exit_2(site, tmp_path):
    _, env = site
    for cmd in (["path", "--lam-min", "0.01"], ["grid", "--lams", "1,0.1"]):
        out = tmp_path / f"{cmd[0]}.json"
        r = _gaplab(env, *cmd, "--dataset", "chain3-ignores-loss", "--eps", "0.01", "--time-limit", "120",
                    "--json", out)
        assert r.returncode == 2, r.stderr
        err = r.stderr.strip().splitlines()
        assert len(err) == 1 and "the max oracle is not exact" in err[0], err
        rows = json.loads(out.read_text())["rows"]
        bad = [p for p in rows if p["status"] == "oracle_not_exact"]
        assert bad and not any(p["certified"] for p in bad)
