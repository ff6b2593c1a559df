"""Damaged or unofficial data files are refused by default, naming the file and the way out
(``verify=False`` / ``--no-verify``): CoNLL-2000 text files, a cut Weizmann horse photo, a cut LSP
``joints.mat``; opted out, a file that cannot be read is still refused naming it."""
from __future__ import annotations

import pytest

from cli_runs import gaplab, run_cli, shared_data


def test_non_official_conll_files_are_refused_by_default(tmp_path):
    from gaplab.core.datasets.conll import load_conll2000
    (tmp_path / "train.txt").write_text("He PRP B-NP\nsleeps VBZ B-VP\n")
    (tmp_path / "test.txt").write_text("He PRP B-NP\n")
    with pytest.raises(ValueError, match=r"train\.txt.*verify=False"):
        load_conll2000(tmp_path)
    assert load_conll2000(tmp_path, verify=False)[0].n == 1
    r = gaplab("train", "--dataset", "conll2000", "--data-home", tmp_path, "--max-passes", "2")
    assert r.returncode == 2 and "train.txt" in r.stderr and "--no-verify" in r.stderr


def test_damaged_horse_file_is_refused_naming_it(tmp_path, capsys):
    """A cut photo in a copy of (part of) the Weizmann database: refused by default with its name
    (was: verify=False by default, and the checksum of the whole directory named no file)."""
    src = shared_data("weizmann_horse")
    if src is None:
        pytest.skip("Weizmann horses not found ($GAPLAB_DATA or ../shared/data/weizmann_horse)")
    from gaplab.core.datasets.horse import load_weizmann_horses
    root = tmp_path / "weizmann_horse"
    for sub in ("rgb", "figure_ground"):
        (root / sub).mkdir(parents=True)
        for k in (1, 2, 3):
            (root / sub / f"horse{k:03d}.jpg").write_bytes((src / sub / f"horse{k:03d}.jpg").read_bytes())
    cut = root / "rgb" / "horse002.jpg"
    cut.write_bytes(cut.read_bytes()[:3000])
    with pytest.raises(ValueError, match=r"sha256 mismatch for .*rgb/horse002\.jpg.*verify=False"):
        load_weizmann_horses(root, progress=False, cache_dir=tmp_path / "cache")
    rc, _, err = run_cli(capsys, "train", "--dataset", "horse-small", "--data-home", root, "--max-passes", "1")
    assert rc == 2 and "horse002.jpg" in err and "--no-verify" in err
    # opted out: a file that cannot be decoded is still refused, naming it (not PIL's bare message)
    with pytest.raises(ValueError, match=r"photo .*horse002\.jpg cannot be read"):
        load_weizmann_horses(root, progress=False, verify=False, use_cache=False)


def test_damaged_joints_mat_is_refused_naming_it(tmp_path, capsys):
    src = shared_data("lsp", "joints.mat")
    if src is None:
        pytest.skip("LSP joints.mat not found ($GAPLAB_DATA or ../shared/data/lsp)")
    bad = tmp_path / "joints.mat"
    bad.write_bytes(src.read_bytes()[:20000])  # cut
    rc, _, err = run_cli(capsys, "train", "--dataset", "lsp-tiny", "--data-home", tmp_path, "--max-passes", "1")
    assert rc == 2 and str(bad) in err and "sha256" in err and "--no-verify" in err
    rc, _, err = run_cli(capsys, "train", "--dataset", "lsp-tiny", "--data-home", tmp_path, "--max-passes", "1",
                      "--no-verify")
    assert rc == 2 and str(bad) in err and "not a readable MATLAB file" in err
