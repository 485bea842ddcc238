"""Course tooling: the lab registry, build, grading, the skill report and the ``a2s`` CLI."""
