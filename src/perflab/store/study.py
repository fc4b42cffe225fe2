"""`read_study`: one study of a lab as typed records, its JSON decoded once, for every reader
(perflab.load_study, through Lab.study, is this for a lab not yet open)."""

from __future__ import annotations

from perflab.errors import PerflabError
from perflab.store.db import ResultStore
from perflab.store.records import Study


def study_name(store: ResultStore, study: str | None = None, where: str = "the lab") -> str:
    """`study` if the results database holds it, else the latest planned study's name."""
    studies = store.studies()
    if not studies:
        raise PerflabError(f"{where} holds no study yet",
                           hint="run one first: perflab run key-cache-segments --lab DIR")
    name = study or studies[0]
    if name not in studies:
        raise PerflabError(f"no study {name!r} in {where}", hint=f"studies: {', '.join(studies)}")
    return name


def read_study(store: ResultStore, study: str | None = None, where: str = "the lab") -> Study:
    """The study named `study` (default: the latest planned) with its latest plan, the points
    of that plan's configurations, its sessions, server states and health reports."""
    name = study_name(store, study, where)
    latest = store.latest_plan(name)
    assert latest is not None, "study_name names a study of the plans table"
    plan, definitions, dataset = latest
    points = store.points(name, definitions)
    sessions = store.sessions(name)
    states = store.server_states([s.id for s in sessions]) if sessions else []
    return Study(where, plan, points, sessions, states, store.health_json(name),
                 store.design(name), dataset=dataset)
