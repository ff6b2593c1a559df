"""Entry point for ``panel serve app/panel_app.py`` (each browser session runs this script and
gets its own app)."""
from gaplab.app.main import build_app

build_app(warm=True).servable(title="gaplab · Minding the gaps")
