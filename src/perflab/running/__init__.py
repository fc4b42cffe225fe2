"""Running a study: from a validated plan to stored points, round after round.

- `runner`: the study (`run_study`, `Runner`): its rounds, their order, when they stop (the round
  policy, the looks, its `Budget`) and its progress, over the Measurer it holds;
- `measurer`: the points (`Measurer`): one at a time on one server, or configurations side by
  side on a fleet, measured and stored; tune measures its trials through a Measurer too;
- `rounds`: the round policy, a pure function (which points round N measures, or stop);
- `backend`, `existing_backend`: where the measured server comes from (managed servers, or a server
  perflab did not start) and how a configuration gets onto it;
- `noise`: the noise a lab measured, kept per way of measuring, and the forecast it gives;
- `calibrate`: the A/A study that measures that noise;
- `turns`: the CPU each server of a fleet spends inside and outside its own turns;
- `_fleet`, `_slices`, `_states`, `_points`, `_progress`: the fleet of servers taking turns in
  time slices, the slices' lengths, the record of what a server ran, a finished point's record,
  the progress lines.
"""
