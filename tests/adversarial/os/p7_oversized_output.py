"""P7 oversized output: return a 900 MB array, which does not fit the arena and travels down the pipe.

The grader trusts what the worker controls (issue 8, class 3). An output larger than the arena's output
region goes back as raw bytes after the header; the header says how many. A float32 array of 15000 x 15000
(900 MB) is well inside the worker's 4 GiB, and the grader must neither receive it whole (past 1 GiB of
its own memory) nor wait past its time-out for it: the reference's shape is known, so anything else can be
refused from the header alone.
"""


def forward(x, params, alloc):
    return np.ones((15000, 15000), np.float32)
