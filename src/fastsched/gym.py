"""A Gymnasium environment on RLScheduler's simulator: pick the next job, get the metric.

Needs the optional extra ``pip install fastsched[rl]`` (gymnasium). Registered as
``fastsched/RLScheduler-v0``::

    import gymnasium, fastsched.gym
    env = gymnasium.make("fastsched/RLScheduler-v0", trace="lublin_256", backfill=True)
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(0)    # run the oldest queued job

An episode is one window of ``window`` consecutive jobs of the trace (start drawn with
the environment's seeded generator as RLScheduler draws it, from ``window`` to ``jobs -
window - 1``, or ``reset(options={"start": i})``) on an empty cluster, under the rules of
:mod:`fastsched.tools.rlsim`. Each step runs one job: the chosen one becomes the head,
waits (backfilling, if on) until it fits, starts, and the clock moves to the next
decision.

- Observation (a dict of float32 arrays in [0, 1]): ``jobs`` (queue_size x 5), the first
  ``queue_size`` queued jobs in FCFS order (RLScheduler sorts its queue so before it
  builds an observation), each: wait / 12 h, requested time / the trace's longest
  runtime, processors / the machine's, 1 if it fits now, 1 if the row is a job (0 =
  padding); ``cluster`` (3): free nodes / nodes, queued jobs / queue_size (at most 1),
  jobs started / window; ``profile`` (profile x 2), the availability profile if running
  jobs end at their estimates: for each of the next ``profile`` estimated ends, time
  until it / 12 h and the nodes free from then / nodes (rows past the last: 0, 1);
  ``profile=0`` leaves it out.
- Action: the row of the job to run; a row past the queue wraps around (row modulo the
  number queued; ``info["action_mask"]`` marks the real rows). With
  ``backfill="agent"`` the action is a pair (row, backfill flag for this head).
- Reward: 0 until the window ends, then the window's metric: -mean bounded slowdown
  (``metric="bsld"``, tau = 10 s), -mean wait in hours (``"wait"``), or utilisation
  (``"utilisation"``), as :mod:`fastsched.tools.rlscheduler` computes them.

Where the queue holds more than ``queue_size`` jobs RLScheduler's observation mixes in
jobs picked by other orders and an unseeded shuffle; this one shows the oldest.

Speed: a step is one call of a compiled kernel (:class:`fastsched.tools.rlfast.FastWindow`,
``env.win``) that runs the decision and writes the next observation into fresh arrays;
about 200k-300k steps/s on one core with a trivial policy on Lublin-1, backfilling or
not, with or without the profile (``fastsched bench rl-env``; benchmarks/RESULTS.md).
The first environment of a process loads the kernels from Numba's cache (``fastsched
compile`` fills it), or compiles them (seconds).
"""
from __future__ import annotations

import gymnasium
import numpy as np
from gymnasium import spaces

from .model.errors import InputError
from .tools.rlfast import JOB_FEATURES, MAX_WAIT, FastWindow, job_features  # noqa: F401
from .tools.rlscheduler import read_rl_trace, trace_path, window_bsld, window_utilisation
from .tools.rlsim import RLJobs, columns

__all__ = ["RLSchedulerEnv", "ENV_ID"]

ENV_ID = "fastsched/RLScheduler-v0"
METRICS = ("bsld", "wait", "utilisation")


def _load(trace) -> RLJobs:
    return trace if isinstance(trace, RLJobs) else read_rl_trace(trace_path(trace))


class RLSchedulerEnv(gymnasium.Env):
    """One window of a trace under RLScheduler's rules; see :mod:`fastsched.gym`."""

    metadata = {"render_modes": []}

    def __init__(self, trace="lublin_256", *, window: int = 256, queue_size: int = 128,
                 profile: int = 8, metric: str = "bsld", backfill: bool | str = False):
        if metric not in METRICS:
            raise InputError(f"metric must be one of {', '.join(METRICS)}, got {metric!r}",
                             field="metric")
        if backfill not in (False, True, "agent"):
            raise InputError(f"backfill must be False, True or 'agent', got {backfill!r}",
                             field="backfill")
        self.jobs = _load(trace)
        if not (0 < window and 2 * window + 1 < len(self.jobs)) or queue_size < 1 \
                or profile < 0:
            raise InputError(f"window {window} / queue_size {queue_size} / profile {profile} "
                             f"do not fit a trace of {len(self.jobs)} jobs", field="window")
        self.window, self.queue_size, self.profile = int(window), int(queue_size), int(profile)
        self.metric, self.backfill = metric, backfill
        self._cols = columns(self.jobs)
        self._features = job_features(self.jobs)
        self.observation_space = spaces.Dict({
            "jobs": spaces.Box(0.0, 1.0, (self.queue_size, JOB_FEATURES), np.float32),
            "cluster": spaces.Box(0.0, 1.0, (3,), np.float32),
            **({"profile": spaces.Box(0.0, 1.0, (self.profile, 2), np.float32)}
               if self.profile else {})})
        self.action_space = (spaces.MultiDiscrete([self.queue_size, 2])
                             if backfill == "agent" else spaces.Discrete(self.queue_size))
        #: the window being run (None before the first reset)
        self.win: FastWindow | None = None
        self._done = True                    # until the first reset
        self._fill = backfill is True
        self._agent = backfill == "agent"

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        start = (options or {}).get("start")
        if start is None:
            start = int(self.np_random.integers(self.window, len(self.jobs) - self.window - 1))
        if self.win is None:
            self.win = FastWindow(self.jobs, self.window, backfill=self._fill,
                                  queue_size=self.queue_size, profile=self.profile,
                                  _columns=self._cols, _features=self._features)
        self.win.reset(int(start))
        self._done = False
        obs, mask = self._buffers()
        self.win.observe(obs["jobs"], obs["cluster"], obs.get("profile", _NO_PROFILE), mask)
        return obs, self._info(mask)

    def step(self, action):
        if self._done:
            raise gymnasium.error.ResetNeeded("call reset() before step()")
        row, fill = (int(action[0]), bool(action[1])) if self._agent else (int(action), None)
        obs, mask = self._buffers()
        self._done = done = self.win.step(row, fill, obs["jobs"], obs["cluster"],
                                          obs.get("profile", _NO_PROFILE), mask)
        reward = self._reward() if done else 0.0
        return obs, reward, done, False, self._info(mask)

    # ------------------------------------------------------------------ helpers

    def _buffers(self) -> tuple[dict, np.ndarray]:
        """Fresh observation arrays (the kernels write every element) and action mask."""
        obs = {"jobs": np.empty((self.queue_size, JOB_FEATURES), dtype=np.float32),
               "cluster": np.empty(3, dtype=np.float32)}
        if self.profile:
            obs["profile"] = np.empty((self.profile, 2), dtype=np.float32)
        return obs, np.empty(self.queue_size, dtype=np.int8)

    def _info(self, mask) -> dict:
        return {"action_mask": mask, "now": self.win.now}

    def _reward(self) -> float:
        win = self.win
        if self.metric == "bsld":
            return -window_bsld(win)
        if self.metric == "wait":
            return -sum(t - win.submit[j] for j, t in win.started) / self.window / 3600
        return window_utilisation(win, self.jobs.machine_procs)


_NO_PROFILE = np.zeros((0, 2), dtype=np.float32)


if ENV_ID not in gymnasium.registry:
    gymnasium.register(ENV_ID, entry_point="fastsched.gym:RLSchedulerEnv")
