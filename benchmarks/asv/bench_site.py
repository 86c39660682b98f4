"""asv: B5 `ai-mix-1m` at a modest size: 10,000 ai-mix jobs on ai-100k under a site's
multifactor priorities (Fair Tree, age, 5-minute PriorityCalcPeriod, GPU billing), EASY.

    asv run -E existing:$(which python3) --python=same --quick --show-stderr --bench Site

The full size (1,000,000 jobs) is ``fastsched bench ai-mix-1m`` (one run of minutes).
The workload is generated in setup (not timed); each sample is one whole simulation.
"""
from fastsched.bench.scenarios import ai_mix_site_inputs, ai_mix_site_run

JOBS = 10_000


class SiteAIMix:
    """B5 at 10,000 jobs: simulate_site, multifactor recomputed every 5 minutes, EASY."""

    timeout = 900
    number = 1
    repeat = (1, 3, 300.0)
    warmup_time = 0

    def setup(self):
        ai_mix_site_run(*ai_mix_site_inputs(200, "ai-8k"))   # load the compiled kernels
        self.inputs = ai_mix_site_inputs(JOBS)

    def time_ai_mix_10k(self):
        ai_mix_site_run(*self.inputs)

    def peakmem_ai_mix_10k(self):
        ai_mix_site_run(*self.inputs)
