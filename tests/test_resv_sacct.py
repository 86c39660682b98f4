"""sacct's Reservation field of jobs running in advance reservations: written from a
run (API and ``simulate --sacct-out``) and read back into the workload's
``reservation`` column, so that a dump replays with its reservations."""
import numpy as np
import pytest

import fastsched as fs
from fastsched import simulate
from fastsched.cli import main
from fastsched.io.sacctout import DEFAULT_SACCT_FIELDS, sacct_lines
from fastsched.model.errors import InputError
from fastsched.model.reservations import Reservation, Reservations
from fastsched.model.resvjobs import JobReservations
from test_resvjobs import _cluster, _conf, _jobs, _magnetic_case, _members, _workload


def _column(result, **options):
    lines = sacct_lines(result, "JobID,Reservation,State", **options)
    assert lines[0] == "JobID|Reservation|State"
    return [line.split("|")[1] for line in lines[1:]]


def test_the_reservation_field_names_the_members_reservation():
    assert "Reservation" in DEFAULT_SACCT_FIELDS
    r = simulate(_cluster(), _jobs(), "easy", advance_reservations=_members())
    # job 4 never fits the window: pending, still in the reservation it asked for
    assert _column(r) == ["", "", "maint", "maint"]
    assert r.reservation.tolist() == ["", "", "maint", "maint"]
    plain = simulate(_cluster(), _jobs(), "easy")
    assert plain.reservation is None and _column(plain) == [""] * 4
    # without members the workload's column is all there is (a run that ignored it)
    assert _column(plain, workload=_workload(["", "x", "", ""])) == ["", "x", "", ""]


def test_a_job_drawn_into_a_magnetic_reservation_shows_it_only_when_it_ran_inside():
    magnetic, jobs, users = _magnetic_case()
    resv = JobReservations.of(magnetic, [""] * 4, users)
    r = simulate(_cluster(), jobs, "easy", advance_reservations=resv)
    # 1 and 3 ran on the reservation's nodes inside it; 2 (bob) and 4 (too long) outside
    assert r.schedule.start_time.tolist() == [0, 0, 50, 50]
    assert _column(r) == ["m", "", "m", ""]


def test_the_reservation_reads_back_and_the_dump_replays(tmp_path):
    from fastsched.io.slurmconf import read_cluster
    cluster = read_cluster(_conf(tmp_path))
    w = _workload(["", "", "maint", "maint"])
    resv = w.reservations(Reservations((Reservation("maint", 50, 80, (0,),
                                                    users=("alice",)),), 4))
    r = simulate(cluster, w.jobs, "easy", advance_reservations=resv)
    path = tmp_path / "out.sacct"
    fs.write_sacct(r, path, workload=w)
    log = fs.read_sacct(path, cluster)
    # job 4 never started: sacct's PENDING row is not read back
    assert log.workload.jobs.job_id.tolist() == [1, 2, 3]
    assert log.workload.reservation.tolist() == ["", "", "maint"]
    assert log.reservation.tolist() == ["", "", "maint"]
    again = simulate(cluster, log.workload.jobs, "easy",
                     advance_reservations=log.workload.reservations(resv))
    assert again.schedule.start_time.tolist() == r.schedule.start_time[:3].tolist()
    # sacct's "(null)" and friends are no reservation
    path.write_text(path.read_text().replace("|maint\n", "|(null)\n"))
    assert fs.read_sacct(path, cluster).workload.reservation.tolist() == ["", "", ""]


def test_cli_sacct_out_has_the_reservation_and_replays_with_the_file(tmp_path, capsys):
    from fastsched.io.slurmconf import read_cluster
    from fastsched.io.workload import write_workload
    conf = _conf(tmp_path)
    jobs = tmp_path / "jobs.csv"
    write_workload(_workload(["", "", "maint", "maint"]), read_cluster(conf), jobs)
    resv = tmp_path / "resv.txt"
    resv.write_text("ReservationName=maint StartTime=50 EndTime=80 Nodes=g1 Users=alice\n")
    sacct = tmp_path / "out.sacct"
    assert main(["simulate", str(jobs), "--cluster", str(conf), "--resv-file", str(resv),
                 "--no-progress", "--sacct-out", str(sacct),
                 "--sacct-format", "JobID,Reservation,Start"]) == 0
    lines = sacct.read_text().splitlines()
    assert lines[0] == "JobID|Reservation|Start"
    assert [x.split("|")[1] for x in lines[1:]] == ["", "", "maint", "maint"]
    full = tmp_path / "full.sacct"        # the default fields: readable as a trace
    assert main(["simulate", str(jobs), "--cluster", str(conf), "--resv-file", str(resv),
                 "--no-progress", "--sacct-out", str(full)]) == 0
    capsys.readouterr()
    out = tmp_path / "again.csv"
    assert main(["simulate", str(full), "--cluster", str(conf), "--resv-file", str(resv),
                 "--no-progress", "--jobs-out", str(out)]) == 0
    import pandas as pd
    assert pd.read_csv(out).set_index("job_id").loc[3, "start_time"] == 50
    capsys.readouterr()
    assert main(["simulate", str(full), "--cluster", str(conf), "--no-progress"]) != 0
    assert "job 3 runs in reservation 'maint': give the reservations (--resv-file)" in \
        capsys.readouterr().err


def test_reading_a_dump_with_a_bad_reservation_name_is_refused(tmp_path):
    from fastsched.io.slurmconf import read_cluster
    cluster = read_cluster(_conf(tmp_path))
    r = simulate(cluster, _jobs(), "easy", advance_reservations=_members())
    path = tmp_path / "out.sacct"
    fs.write_sacct(r, path, workload=_workload(["", "", "maint", "maint"]))
    log = fs.read_sacct(path, cluster)
    with pytest.raises(InputError, match="job 3: requested reservation 'maint' is invalid"):
        log.workload.reservations(Reservations((Reservation("other", 0, 9, (1,)),), 4))
    assert np.asarray(log.workload.reservation).dtype == object


def test_cli_check_of_a_dump_holds_its_runs_to_their_reservations(tmp_path, capsys):
    from fastsched.io.slurmconf import read_cluster
    from fastsched.io.workload import write_workload
    conf = _conf(tmp_path)
    jobs = tmp_path / "jobs.csv"
    write_workload(_workload(["", "", "maint", "maint"]), read_cluster(conf), jobs)
    resv = tmp_path / "resv.txt"
    resv.write_text("ReservationName=maint StartTime=50 EndTime=80 Nodes=g1 Users=alice\n")
    dump = tmp_path / "out.sacct"
    assert main(["simulate", str(jobs), "--cluster", str(conf), "--resv-file", str(resv),
                 "--no-progress", "--sacct-out", str(dump)]) == 0
    capsys.readouterr()
    check = ["check", str(dump), "--cluster", str(conf), "--resv-file", str(resv)]
    assert main(check) == 0
    out = capsys.readouterr().out
    assert "outside_reservation" in out and "reserved_node" in out
    # job 3 recorded as run on g2 at 50: not its reservation's node
    moved = dump.read_text().replace("|g1|COMPLETED|0:0|maint", "|g2|COMPLETED|0:0|maint")
    assert moved != dump.read_text()
    dump.write_text(moved)
    assert main(check) == 1
    assert "job 3 of reservation 'maint' ran on node 1, not in it" in capsys.readouterr().out
    resv.write_text("ReservationName=other StartTime=50 EndTime=80 Nodes=g1\n")
    assert main(check) == 2
    assert "resv.txt: field Reservation: job 3 ran in reservation 'maint', which the " \
        "reservation file does not define" in capsys.readouterr().err
