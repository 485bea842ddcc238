"""Course tooling: the lab registry, build, grading, the skill report and the ``a2s`` CLI."""

import sys


def skip_rfc3987() -> None:
    """Keep jsonschema (imported by nbformat) from loading ``rfc3987_syntax``.

    jsonschema loads it for its "iri" format when it is installed (JupyterLab's jupyter-events
    installs it), and it compiles a lark grammar at import: 1.6 s of every `a2s` start and of
    every graded notebook's pytest run. No notebook schema uses the format. Called by the
    ``a2s`` CLI and the grading run's pytest plugin, never in the learner's kernel.
    """
    sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]
