"""S16 the grader's command line in sys.argv: multiprocessing hands every worker the grading process's argv.

Issue 16, class 3: "/proc/self/cmdline shows the grader's sys.path". The warden zeroes the command line and
environment blocks it inherited, but the worker's Python objects came another way: multiprocessing's spawn
preparation data (sent to the fork server for every process it starts) carries the grading process's
``sys.argv`` and ``sys.path``, and the child sets both from it. So ``sys.argv`` in a worker is the grading
process's command line (a ``--scheduler tcp://user:token@host``, an API key given as an argument, the
script's path) and ``sys.path`` its import path (PYTHONPATH, the project folder). The kernel puts both in
its error message. What must hold: nothing of the grading process's command line reaches a worker (the
runner passes a canary argument and checks the verdict for it). Pure Python, no native code needed.
"""

import sys


def forward(x, params, alloc):
    raise RuntimeError("argv " + " ".join(sys.argv[1:])[-160:] + " | path " + " ".join(sys.path[:3]))
