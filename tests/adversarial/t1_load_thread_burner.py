"""T1 load-time thread burner: spin on the timing reference's core except during our own calls.

Timing (issue 8, class 5). The timing reference runs in a twin worker pinned to the candidate's core.
The hygiene check counts threads started *during* a call; a thread started while the module loads is
never counted. The spinner (``_idle_spinner.py``, appended by the test) runs whenever ``forward`` is not
running, so each reference call shares its core with it while the candidate's calls have it to
themselves: the honest kernel (the reference's own arithmetic) looks about twice as fast.
"""


def _on_idle():
    pass
