"""Detached sessions: probes that run on their own, and the views that attach.

- ``registry``: where a session's files live, its name, and its state
  (running / finished / died) read from them (``list_sessions``, ``find``).
- ``control``: the session's control socket (Unix, 0600, the session's own
  user only) and its client (``request``).
- ``daemon``: ``detach(plan, run)``, the double fork that turns a plan into a
  background session.

Nothing here imports Textual (CLI layer). docs/sessions.md has the model.
"""
