# The course's grading image: Python 3.11, the CPU build of torch, and the course checkout with
# its canonical solutions (the grader rebuilds every submission from them). The GitHub
# Classroom workflow (classroom/autograding.yml, written by `a2s release`) grades in it.
#
#   docker build -t ghcr.io/ORG/algo2silicon-grader:TERM \
#       --build-arg A2S_COURSE_COMMIT="$(git rev-parse HEAD)" .
#   docker push ghcr.io/ORG/algo2silicon-grader:TERM
FROM python:3.11-slim

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    MPLBACKEND=Agg

# torch first and explicitly from the CPU index: resolved from PyPI as a dependency of the
# course, it would be the CUDA build, several GB that a CPU-only grader never uses
RUN python -m pip install "torch>=2.4,<2.14" --index-url https://download.pytorch.org/whl/cpu

# the course, editable, so that a2s finds /course/solutions; torch is already satisfied
COPY . /course
RUN python -m pip install -e /course \
    && (a2s doctor --no-kernel || true) \
    && a2s check 00 --notebook /course/solutions/00_orientation.ipynb

# recorded in every result's course_commit (the image has no .git to ask)
ARG A2S_COURSE_COMMIT=""
ENV A2S_COURSE_COMMIT=${A2S_COURSE_COMMIT}

WORKDIR /work
CMD ["a2s", "--help"]
