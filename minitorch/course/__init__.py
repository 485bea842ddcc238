"""Course tooling: the lab registry, build, grading, the skill report and the ``a2s`` CLI."""

import sys

# jsonschema (imported by nbformat) loads rfc3987_syntax for its "iri" format when that is
# installed (JupyterLab's jupyter-events installs it), and rfc3987_syntax compiles a lark
# grammar at import: 1.6 s of every `a2s` start and of every graded notebook's pytest run.
# No notebook schema uses the format, so the course's own processes go without it (never
# the learner's kernel).
sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]
