"""The app says why a setting is refused: an invalid λ leaves the session's λ unchanged and the
message names the rule and the value typed."""
import pytest


def test_app_says_why_an_invalid_lam_is_refused():
    pytest.importorskip("panel")
    from gaplab.app.main import build_app
    app = build_app(periodic=False)
    try:
        app.widgets["lam"].value = -1.0
        assert app.session.lam == 0.01
        level, text = app.session.messages()[-1]
        assert level == "error" and "λ must be" in text and "-1.0" in text
    finally:
        app.close()
