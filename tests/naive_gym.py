"""The plain twin of fastsched.gym's environment: a frozen copy of its first version,
which observed a window by rebuilding every array from :class:`fastsched.tools.rlsim.RLWindow`
(lists of job indices) at each step. THE DEFINITION of the observations and rewards the
fast environment (window state in arrays, Numba kernels) must give bit for bit."""
from __future__ import annotations

import gymnasium
import numpy as np
from gymnasium import spaces

from fastsched.model.errors import InputError
from fastsched.tools.rlscheduler import read_rl_trace, trace_path, window_bsld, window_utilisation
from fastsched.tools.rlsim import RLJobs, RLWindow, columns

MAX_WAIT = 12 * 3600
JOB_FEATURES = 5
METRICS = ("bsld", "wait", "utilisation")


def _load(trace) -> RLJobs:
    return trace if isinstance(trace, RLJobs) else read_rl_trace(trace_path(trace))


class PlainRLSchedulerEnv(gymnasium.Env):
    """The environment as first written, on :class:`RLWindow`'s plain-Python rules."""

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
        self._features = _job_features(self.jobs)
        self._nodes = np.asarray(self._cols[3], dtype=np.int64)
        self.observation_space = spaces.Dict({
            "jobs": spaces.Box(0.0, 1.0, (self.queue_size, JOB_FEATURES), np.float32),
            "cluster": spaces.Box(0.0, 1.0, (3,), np.float32),
            **({"profile": spaces.Box(0.0, 1.0, (self.profile, 2), np.float32)}
               if self.profile else {})})
        self.action_space = (spaces.MultiDiscrete([self.queue_size, 2])
                             if backfill == "agent" else spaces.Discrete(self.queue_size))
        self.win: RLWindow | None = None
        self._visible: list[int] = []

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        start = (options or {}).get("start")
        if start is None:
            start = int(self.np_random.integers(self.window, len(self.jobs) - self.window - 1))
        self.win = RLWindow(self.jobs, int(start), self.window, backfill=self.backfill is True,
                            _columns=self._cols)
        return self._observe(), self._info()

    def step(self, action):
        if self.win is None or self.win.done:
            raise gymnasium.error.ResetNeeded("call reset() before step()")
        row, fill = (int(action[0]), bool(action[1])) if self.backfill == "agent" \
            else (int(action), None)
        done = self.win.run(self._visible[row % len(self._visible)], fill)
        reward = self._reward() if done else 0.0
        return self._observe(), reward, done, False, self._info()

    # ------------------------------------------------------------------ helpers

    def _observe(self) -> dict:
        win = self.win
        win.queue.sort(key=win.submit.__getitem__)
        self._visible = win.queue[:self.queue_size]
        jobs = np.zeros((self.queue_size, JOB_FEATURES), dtype=np.float32)
        if self._visible:
            idx = np.array(self._visible)
            n = len(idx)
            jobs[:n] = self._features[idx]
            jobs[:n, 0] = np.minimum((win.now - self.jobs.submit[idx]) / MAX_WAIT, 1.0)
            jobs[:n, 3] = self._nodes[idx] <= win.free
        started = len(win.started) / self.window
        cluster = np.array([win.free / self.jobs.machine_nodes,
                            min(len(win.queue) / self.queue_size, 1.0), started],
                           dtype=np.float32)
        if not self.profile:
            return {"jobs": jobs, "cluster": cluster}
        return {"jobs": jobs, "cluster": cluster, "profile": self._profile()}

    def _profile(self) -> np.ndarray:
        win = self.win
        out = np.zeros((self.profile, 2), dtype=np.float32)
        out[:, 1] = 1.0
        if win.running:
            # sorted copies: the running list's own order decides RLScheduler's tie order
            est = np.fromiter(map(win.estimate.__getitem__, win.running), np.int64)
            order = np.argsort(est, kind="stable")[:self.profile]
            k = len(order)
            out[:k, 0] = np.clip((est[order] - win.now) / MAX_WAIT, 0.0, 1.0)
            freed = np.cumsum(self._nodes[np.array(win.running)[order]]) + win.free
            out[:k, 1] = freed / self.jobs.machine_nodes
        return out

    def _info(self) -> dict:
        mask = np.zeros(self.queue_size, dtype=np.int8)
        mask[:len(self._visible)] = 1
        return {"action_mask": mask, "now": int(self.win.now)}

    def _reward(self) -> float:
        win = self.win
        if self.metric == "bsld":
            return -window_bsld(win)
        if self.metric == "wait":
            return -sum(t - win.submit[j] for j, t in win.started) / self.window / 3600
        return window_utilisation(win, self.jobs.machine_procs)


def _job_features(jobs: RLJobs) -> np.ndarray:
    """Every job's observation row with its fixed features: requested time / longest
    runtime, procs / machine procs, and the row-is-a-job flag (wait and fits-now: 0)."""
    rows = np.zeros((len(jobs), JOB_FEATURES), dtype=np.float32)
    rows[:, 1] = np.minimum(jobs.request / max(int(jobs.run.max()), 1), 1.0)
    rows[:, 2] = np.minimum(jobs.procs / jobs.machine_procs, 1.0)
    rows[:, 4] = 1.0
    return rows
