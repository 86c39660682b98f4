"""One rank of a torch.distributed job (gloo, CPU) started by ``fastsched run``.

Usage: ``fastsched run -N 2 -n 4 -- python tests/ddp_allreduce.py OUT``. Every
rank joins through the ``env://`` variables the launcher sets (RANK,
WORLD_SIZE, MASTER_ADDR, MASTER_PORT), all-reduces ``tensor([rank + 1])`` and
checks the sum is ``1 + 2 + ... + WORLD_SIZE``; rank 0 writes a JSON record to
OUT. ``--crash-rank R``: rank R exits with status 3 once the group is formed,
leaving the others blocked in the all-reduce (the launcher must end them).
"""
import datetime
import json
import os
import sys

import torch
import torch.distributed as dist


CRASH_STATUS = 3


def main(out_path: str, crash_rank: int | None = None) -> int:
    # Node names stand for this machine: talk over loopback.
    if sys.platform.startswith("linux"):
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    assert rank == int(os.environ["SLURM_PROCID"])
    dist.init_process_group("gloo", init_method="env://",
                            timeout=datetime.timedelta(seconds=600))
    try:
        assert dist.get_rank() == rank and dist.get_world_size() == world
        if rank == crash_rank:
            os._exit(CRASH_STATUS)
        t = torch.tensor([float(rank + 1)])
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
        total = t.item()
        expected = world * (world + 1) / 2
        assert total == expected, f"rank {rank}: all-reduce gave {total}, expected {expected}"
        # every rank reports where it ran, rank 0 collects
        layout = [None] * world
        dist.all_gather_object(layout, {
            "rank": rank, "local_rank": int(os.environ["LOCAL_RANK"]),
            "node_id": int(os.environ["SLURM_NODEID"]), "node": os.environ["SLURMD_NODENAME"]})
        if rank == 0:
            with open(out_path, "w") as f:
                json.dump({"sum": total, "world_size": world, "layout": layout}, f)
        dist.barrier()
    finally:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    crash = int(sys.argv[3]) if sys.argv[2:3] == ["--crash-rank"] else None
    sys.exit(main(sys.argv[1], crash))
