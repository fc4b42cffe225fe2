"""Running a study: from a validated plan to stored points, round after round.

- `runner`: the round loop (`run_study`, `Runner`) over what `measurer.Measurer` measures: one
  point, or one round of configurations side by side or one after another; tune borrows the
  Measurer for its trials;
- `rounds`: the round policy, a pure function (which points round N measures, or stop);
- `backend`, `existing_backend`: where the measured server comes from (managed servers, or a server
  perflab did not start) and how a configuration gets onto it;
- `noise`: the noise a lab measured, kept per way of measuring, and the forecast it gives;
- `calibrate`: the A/A study that measures that noise;
- `turns`: the CPU each server of a fleet spends inside and outside its own turns;
- `_fleet`, `_states`, `_points`, `_progress`: the fleet of servers taking turns in time
  slices, the record of what a server ran, a finished point's record, the progress lines.
"""
