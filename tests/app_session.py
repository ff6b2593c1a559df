"""An app :class:`~gaplab.app.session.Session` idle on its problem, for the app tests."""


def idle_session(timeout: float = 60, **params):
    """A new Session with ``params``, its problem loaded and idle within ``timeout`` seconds
    (an AssertionError with the session's messages otherwise)."""
    from gaplab.app.session import Session
    s = Session(**params)
    assert s.wait_idle(timeout)
    assert s.status == "idle", s.messages()
    return s
