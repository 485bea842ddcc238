# The course's PRIVATE grading image: Python 3.11, the CPU build of torch, and the whole course
# checkout (`COPY .`), so it holds solutions/ and any hidden checks you keep in the checkout
# (`a2s grade --extra-checks /course/DIR`). It is the instructor's: grade collected
# submissions in it; never publish it, give it to students, or name it in a Classroom workflow
# (a student can edit the workflow and read anything in its image). Students get the student
# image instead: the `Dockerfile` that `a2s release` writes into the template, whose build
# context (.dockerignore) is the template's labs/ and .a2s/ only (docs/instructor_guide.md).
#
#   docker build -t ghcr.io/ORG/algo2silicon-grader:TERM \
#       --build-arg A2S_COURSE_COMMIT="$(git rev-parse HEAD)" .
#   docker push ghcr.io/ORG/algo2silicon-grader:TERM     # to a private registry only
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
