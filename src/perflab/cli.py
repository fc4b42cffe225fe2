"""perflab's command line: parse arguments, call one core function, render its result.

The statistics, chart and tuning stack (scipy, matplotlib, optuna) takes seconds and ~100 MB to
import, so commands import it themselves: `perflab digest` and `perflab health` start fast and
stay small without it.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import signal
import sys
import time
from pathlib import Path

import perflab
from perflab.digest import render as digest_render
from perflab.digest.workload import write_workload
from perflab.errors import PerflabError
from perflab.health import render as health_render
from perflab.lab import Lab
from perflab.plan import with_overrides
from perflab.probes.system import host_facts
from perflab.procs import stop_on_signals
from perflab.say import silent
from perflab.server.connection import Endpoint
from perflab.stats.design import MARGIN
from perflab.studies import builtin_description, builtin_names, resolve_plans
from perflab.version import __version__


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    stop_on_signals()  # a Ctrl-C is never lost in a destructor; nor a dropped ssh (SIGHUP)
    try:
        _note_pending_journal(args)
        code = args.func(args)
        sys.stdout.flush()  # here, so that a reader gone away is caught below
        return code
    except PerflabError as exc:
        flag = f" ({_flag(exc.option)})" if exc.option else ""
        print(f"perflab: error: {exc.message}{flag}", file=sys.stderr)
        if exc.hint:
            print(f"  hint: {exc.hint}", file=sys.stderr)
        if exc.detail:
            print(_indent(exc.detail), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            "perflab: interrupted; finished points are stored, run the same command to resume",
            file=sys.stderr,
        )
        return 130
    except BrokenPipeError:
        # stdout's reader went away (perflab report LAB | head): quiet, as for any Unix tool;
        # stdout now points at /dev/null so that Python's flush at exit does not fail again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE


# the API arguments whose flag is not their name with dashes (errors.PerflabError.option)
FLAG_OF_ARGUMENT = {
    "seconds": "--time",
    "server": "--socket, or --host and --port",
    "allow": "--allow-writes, --allow-set, --allow-locks or --read-only-account",
}


def _flag(argument: str) -> str:
    return FLAG_OF_ARGUMENT.get(argument, "--" + argument.replace("_", "-"))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="perflab",
        description="A performance lab for MySQL and MariaDB: run studies on managed servers, "
        "keep every result, print the tables engineers publish.",
    )
    parser.add_argument("--version", action="version", version=f"perflab {__version__}")
    sub = parser.add_subparsers(required=True, metavar="COMMAND")
    for add in (_add_run, _add_restore, _add_report, _add_compare, _add_calibrate, _add_tune,
                _add_health, _add_digest, _add_studies, _add_servers, _add_env):
        add(sub)
    return parser


def _add_run(sub) -> None:
    run = sub.add_parser("run", help="run a study (built-in name or plan file) in a lab")
    run.add_argument("study", help="built-in study name (see: perflab studies) or a plan .toml")
    run.add_argument("--lab", required=True, type=Path, help="lab directory (created if missing)")
    run.add_argument("--scale", type=float, help="multiply the dataset's rows by this factor")
    run.add_argument("--rounds", type=int, help="override run.rounds")
    run.add_argument("--run-seconds", type=int, help="override run.run_seconds")
    run.add_argument("--warmup-seconds", type=int, help="override run.warmup_seconds")
    run.add_argument("--threads", type=_thread_list, help="override run.threads, e.g. 1,4,16")
    run.add_argument("--time", metavar="DURATION",
                     help="decide within this budget (e.g. 10m): rounds go on for the "
                     "comparisons still undecided, and the differences found until they are "
                     "measured to the margin (overrides run.time)")
    _margin_option(run)
    run.add_argument("--clients", metavar="SCHEDULER",
                     help="a Dask scheduler's address (tcp://HOST:8786): each point's threads "
                     "are spread over its workers, one per client machine (overrides "
                     "run.clients)")
    run.add_argument("--build", metavar="BUILD",
                     help="run every configuration on this server build (perflab servers "
                     "lists them; default: each configuration's, else host)")
    run.add_argument("--quiet", action="store_true", help="no progress lines")
    target = run.add_argument_group(
        "a server perflab did not start (read-only unless allowed; default: the lab's "
        "managed servers)")
    where = target.add_mutually_exclusive_group()
    where.add_argument("--socket", help="Unix socket of a running server")
    where.add_argument("--host", help="host of a running server (with --port)")
    _login_options(target)
    target.add_argument("--allow-writes", action="store_true",
                        help="let writing workloads and dataset loads run, in perflab_* "
                        "schemas only")
    target.add_argument("--allow-set", action="store_true",
                        help="let configurations SET GLOBAL dynamic variables; they are "
                        "journalled in the lab and put back at the end")
    target.add_argument("--allow-locks", action="store_true",
                        help="let the workload's statements take locks (FOR UPDATE, LOCK IN "
                        "SHARE MODE, GET_LOCK)")
    target.add_argument("--read-only-account", action="store_true",
                        help="refuse to run unless the account can only read (no SUPER, no "
                        "write privilege): the server then enforces the read-only promise")
    run.set_defaults(func=cmd_run)


def _add_restore(sub) -> None:
    restore = sub.add_parser(
        "restore", help="put back the variables a killed perflab left changed on a server it "
        "did not start (any command on the lab tries this first)")
    restore.add_argument("--lab", required=True, type=Path)
    where = restore.add_mutually_exclusive_group()
    where.add_argument("--socket", help="Unix socket of the server (default: the journal's)")
    where.add_argument("--host", help="host of the server (default: the journal's)")
    _login_options(restore)
    restore.set_defaults(func=cmd_restore)


def _add_report(sub) -> None:
    report = sub.add_parser("report", help="print a lab's tables from its results database")
    report.add_argument("lab", type=Path)
    report.add_argument("--study", help="which study of the lab (default: the latest)")
    report.add_argument("--format", choices=FORMATS, default="text")
    report.add_argument("--html", type=Path, metavar="FILE",
                        help="also write a self-contained HTML report to FILE")
    report.add_argument("--charts", type=Path, metavar="DIR",
                        help="also write every chart as PNG and SVG into DIR")
    report.add_argument("--series", metavar="CONFIG:THREADS[:ROUND]",
                        help="the point whose per-second series is charted")
    _margin_option(report)
    report.add_argument("--cv-threshold", type=float, default=0.15, metavar="FRACTION",
                        help="flag cells whose throughput varies more than this over rounds "
                        "(default 0.15)")
    report.set_defaults(func=cmd_report)


def _add_compare(sub) -> None:
    compare = sub.add_parser("compare", help="two labs side by side, with verdicts (B vs A)")
    compare.add_argument("lab_a", type=Path, help="the reference lab")
    compare.add_argument("lab_b", type=Path)
    compare.add_argument("--study-a", help="study of lab A (default: its latest)")
    compare.add_argument("--study-b", help="study of lab B (default: its latest)")
    compare.add_argument("--format", choices=("text", "md", "csv"), default="text")
    _margin_option(compare, "study A's plan's")
    compare.set_defaults(func=cmd_compare)


def _add_calibrate(sub) -> None:
    calibrate = sub.add_parser(
        "calibrate", help="measure this machine's noise for a study (an A/A run), kept in the "
        "lab for the study's runs",
        description="Runs the study's baseline against an identical copy of itself, as a run "
        "would measure them, and prints the noise per round and what the study's rounds can "
        "resolve with it.")
    calibrate.add_argument("study", help="built-in study name or a plan .toml")
    calibrate.add_argument("--lab", required=True, type=Path)
    calibrate.add_argument("--rounds", type=int, default=8, help="A/A rounds (default 8)")
    calibrate.add_argument("--threads", type=_thread_list,
                           help="thread counts (default: the plan's smallest, middle, largest)")
    calibrate.add_argument("--again", action="store_true",
                           help="measure a new calibration (default: resume, or reprint, the "
                                "lab's latest one), e.g. once a machine that was loaded is idle")
    calibrate.set_defaults(func=cmd_calibrate)


def _add_tune(sub) -> None:
    tune = sub.add_parser("tune", help="search server settings for a plan's workload")
    tune.add_argument("study", help="built-in study name or plan .toml (its [tune] section)")
    tune.add_argument("--lab", required=True, type=Path)
    tune.add_argument("--method", choices=("ofat", "bayes", "random"), default="bayes")
    tune.add_argument("--budget", type=int, help="number of trials (the study's total, "
                      "whichever worker runs them); checking the answer then takes at most "
                      "twice the trials' time")
    tune.add_argument("--time", metavar="DURATION",
                      help="and/or the whole tune's time (this worker's), e.g. 600 or 15m: "
                      "the trials take at most a third, checking the answer the rest")
    tune.add_argument("--sampler", help="bayes's search (bayes only): additive "
                      "(perflab's: screening in groups, then an additive model of the knobs' "
                      "effects, near the best-believed setting; the default) or an Optuna sampler: "
                      "tpe, qmc, random")
    tune.add_argument("--storage", metavar="URL",
                      help="Optuna storage shared by workers on several hosts, each with its "
                      "own --lab, e.g. mysql+pymysql://tuner@dbhost/optuna?read_default_file="
                      "/home/me/.my.cnf (the password from that file, not the command line); "
                      "default: the lab's SQLite")
    tune.add_argument("--knobs", type=_name_list, metavar="A,B,...",
                      help="search exactly these server variables (overrides tune.knobs and "
                      "tune.exclude; default: the curated knobs of the study's engines)")
    tune.add_argument("--exclude", type=_name_list, metavar="A,B,...",
                      help="leave these curated knobs out, e.g. "
                      "query_cache_type,query_cache_size (overrides tune.exclude and "
                      "tune.knobs)")
    tune.add_argument("--seed", type=int, default=0)
    tune.add_argument("--allow-unsafe", action="store_true",
                      help="also search knobs that trade durability for speed")
    tune.add_argument("--html", type=Path, metavar="FILE", help="also write an HTML report")
    tune.set_defaults(func=cmd_tune)


def _add_health(sub) -> None:
    health = sub.add_parser(
        "health", help="judge a server's counters against acceptable ranges, since start and hot",
        description="Read-only. Exit status 1 when a rule fails, 2 on a usage error.")
    where = health.add_mutually_exclusive_group(required=True)
    where.add_argument("--socket", help="Unix socket of a running server")
    where.add_argument("--host", help="host of a running server (with --port)")
    where.add_argument("--lab", type=Path, help="start the lab's managed server for a study's "
                       "configuration and drive the study's workload through both views")
    _login_options(health)
    health.add_argument("--interval", type=float, default=10, metavar="SECONDS",
                        help="hot window between the two snapshots (0: since start only); "
                        "with --lab also the length of the cold phase (default 10)")
    health.add_argument("--study", help="with --lab: built-in study or plan .toml "
                        "(default: the lab's latest study)")
    health.add_argument("--config", help="with --lab: configuration (default: the baseline)")
    health.add_argument("--threads", type=int, help="with --lab: load threads "
                        "(default: the plan's warm-up threads)")
    health.add_argument("--format", choices=("text", "json"), default="text")
    health.add_argument("--explain", action="store_true",
                        help="also print each rule's formula, variables and threshold source")
    health.set_defaults(func=cmd_health)


def _add_digest(sub) -> None:
    digest = sub.add_parser(
        "digest", help="fingerprints, costs and waste findings from MariaDB and MySQL query logs",
        description="Reads general and slow query logs (plain or gzip), streaming. Groups "
        "statements by pt-query-digest's fingerprints and flags repeated reads, needless "
        "schema switches, constant-only SELECTs and N+1 bursts.")
    digest.add_argument("logs", nargs="+", type=Path, metavar="LOG")
    digest.add_argument("--log-format", choices=("general", "slow"),
                        help="the logs' kind (default: detected from each file)")
    digest.add_argument("--format", choices=("text", "json", "html"), default="text")
    digest.add_argument("--top", type=_positive, default=20, help="fingerprints in the profile")
    digest.add_argument("--burst", type=int, default=10,
                        help="N+1: this many runs of one read fingerprint ... (default 10)")
    digest.add_argument("--window", type=float, default=1.0, metavar="SECONDS",
                        help="... by one connection within this many seconds (default 1)")
    digest.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="processes for big plain logs (default: one per CPU; 1 for "
                        "exact runs across the cuts)")
    digest.add_argument("--workload", type=Path, metavar="FILE",
                        help="also write the top fingerprints as a `sql` workload file")
    digest.add_argument("--redact", action="store_true",
                        help="show every literal in examples as ? and write no value of the "
                        "log into --workload (for logs that hold personal data; passwords are "
                        "always masked)")
    digest.set_defaults(func=cmd_digest)


def _add_studies(sub) -> None:
    studies = sub.add_parser("studies", help="list the built-in studies")
    studies.set_defaults(func=cmd_studies)


def _add_servers(sub) -> None:
    servers = sub.add_parser("servers", help="server builds: installed, offered, add, remove",
                             description="Server builds beside the host's own MariaDB, each "
                             "installed once from Debian's archives into a per-user cache.")
    servers.add_argument("action", nargs="?", choices=("list", "add", "remove"), default="list")
    servers.add_argument("names", nargs="*", metavar="BUILD", help="e.g. mysql-9.7 mariadb-11.8")
    servers.set_defaults(func=cmd_servers)


def _add_env(sub) -> None:
    env = sub.add_parser("env", help="print the facts perflab records about this machine")
    env.add_argument("--path", type=Path, default=Path("."), help="where a datadir would live")
    env.set_defaults(func=cmd_env)


def _login_options(parser) -> None:
    parser.add_argument("--port", type=int, default=3306)
    parser.add_argument("--user", help="default: the option file's, else root")
    parser.add_argument("--defaults-file", metavar="FILE",
                        help="option file whose [client] group holds user and password")
    parser.add_argument("--password", action="store_true",
                        help="prompt for the password (never given on the command line)")


def _endpoint(args: argparse.Namespace) -> Endpoint | None:
    """The server the connection options name, or None when they name none. Its sessions are
    read-only at the server (health, restore: SET GLOBAL is not a write there); a run whose
    workload writes, with --allow-writes, opens them read-write."""
    if not (args.socket or args.host):
        return None
    if not 0 < args.port < 65536:
        raise PerflabError(f"--port must be from 1 to 65535, got {args.port}")
    if args.defaults_file and not Path(args.defaults_file).is_file():
        raise PerflabError(f"--defaults-file {args.defaults_file} is not a file",
                           hint="give an option file with a [client] group (user, password)")
    user = args.user or ("" if args.defaults_file else "root")  # "": the file's user
    password = getpass.getpass(f"password for {user or 'the user'}: ") if args.password else ""
    return Endpoint(socket=args.socket, host=args.host or "127.0.0.1",
                    port=None if args.socket else args.port, user=user, password=password,
                    option_file=str(Path(args.defaults_file).resolve())
                    if args.defaults_file else None, read_only=True)


def _note_pending_journal(args: argparse.Namespace) -> None:
    """A command on a lab whose journal holds variables a killed perflab changed on a server
    it did not start says so; only `restore` and `run --allow-set` play it back."""
    from perflab.server.existing import pending_note

    lab_dir = getattr(args, "lab", None)
    if not isinstance(lab_dir, Path) or args.func is cmd_restore or \
            getattr(args, "allow_set", False) or not Lab(lab_dir).root.is_dir():
        return
    note = pending_note(Lab(lab_dir).root)
    if note:
        print(f"perflab: warning: {note}", file=sys.stderr)


def cmd_restore(args: argparse.Namespace) -> int:
    if not perflab.restore(args.lab, _endpoint(args), _say):
        print(f"{Lab(args.lab).root}: nothing to put back", file=sys.stderr)
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    plans = [with_overrides(plan, **{name: getattr(args, name) for name in RUN_OVERRIDES})
             for plan in resolve_plans(args.study)]  # a suite's several, checked first
    say = silent if args.quiet else _say
    studies, failed = [], False
    for plan in plans:
        summary = perflab.run(plan, args.lab, _endpoint(args), _permissions(args), say)
        say(summary.describe())
        studies.append(perflab.load_study(args.lab, plan.name))
        print(perflab.render(studies[-1]), flush=True)
        failed = failed or bool(summary.failed)
    if len(studies) > 1:
        print(f"\n{perflab.render_suite(studies)}")
    return 1 if failed else 0


# the flags of `run` that override the plan's own values (plan.with_overrides)
RUN_OVERRIDES = ("scale", "rounds", "run_seconds", "warmup_seconds", "threads", "time",
                 "margin", "clients", "build")


def _permissions(args: argparse.Namespace) -> perflab.Permissions | None:
    """What a run may do on a server perflab did not start; None when no flag asks for more
    than reading and no such server is named (the API refuses permissions without one)."""
    flags = (args.allow_writes, args.allow_set, args.allow_locks, args.read_only_account)
    if not any(flags) and not (args.socket or args.host):
        return None
    return perflab.Permissions(*flags)


FORMATS = perflab.REPORT_FORMATS


def _margin_option(parser: argparse.ArgumentParser, whose: str = "the plan's") -> None:
    parser.add_argument("--margin", type=float, metavar="FRACTION",
                        help="'equivalent' means the interval lies within ±FRACTION (default: "
                        f"{whose} run.margin, {MARGIN} unless it says otherwise)")


def cmd_report(args: argparse.Namespace) -> int:
    options = perflab.ReportOptions(args.margin, args.cv_threshold, args.series)
    perflab.api.check_report_options(options)
    _check_output("--html", args.html)
    _check_output("--charts", args.charts, directory=True)
    study = perflab.load_study(args.lab, args.study)
    print(perflab.render(study, args.format, options))
    if args.html:
        args.html.write_text(perflab.render(study, "html", options))
        print(f"wrote {args.html}", file=sys.stderr)
    if args.charts:
        count = perflab.write_charts(study, args.charts, options)
        print(f"wrote {count} charts (PNG and SVG) into {args.charts}", file=sys.stderr)
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    table = perflab.compare(args.lab_a, args.lab_b, args.study_a, args.study_b, args.margin)
    print({"text": table.render, "md": table.markdown, "csv": table.csv}[args.format]())
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    result = perflab.calibrate(args.study, args.lab, args.rounds, args.threads, _say,
                               again=args.again)
    print("\n\n".join(table.render() for table in result.tables()))
    return 0


def cmd_tune(args: argparse.Namespace) -> int:
    _check_output("--html", args.html)
    _tune_report(args, _tuned(args))
    return 0


def _tuned(args: argparse.Namespace):
    """The tune the command asks for; interrupted while its answer was checked, the report of
    what the checks decided, the my.cnf with it, is given before perflab stops."""
    from perflab.tune.budget import CheckInterrupted

    try:
        return perflab.tune_server(args.study, args.lab, args.method, budget=args.budget,
                                   seconds=args.time, sampler=args.sampler, storage=args.storage,
                                   seed=args.seed, knobs=args.knobs, exclude=args.exclude,
                                   allow_unsafe=args.allow_unsafe, say=_say)
    except CheckInterrupted as stop:
        _tune_report(args, stop.result)
        raise


def _tune_report(args: argparse.Namespace, result) -> None:
    """A tune's report as text, and as a page when --html names one."""
    from perflab.tune import render as tune_render

    print(tune_render.render_text(result))
    if args.html:
        args.html.write_text(tune_render.render_html(result))
        print(f"wrote {args.html}", file=sys.stderr)


def cmd_health(args: argparse.Namespace) -> int:
    if args.lab:
        report = perflab.check_lab_health(args.lab, args.study, args.config, args.threads,
                                          args.interval, _say)
    else:
        endpoint = _endpoint(args)
        assert endpoint is not None  # argparse requires --lab, --socket or --host
        report = perflab.check_health(endpoint, args.interval)
    if args.format == "json":
        print(health_render.render_json(report))
    else:
        print(health_render.render_text(report, args.explain))
    return 1 if any(report.failing().values()) else 0


def cmd_digest(args: argparse.Namespace) -> int:
    _check_output("--workload", args.workload)
    result = perflab.digest_logs(args.logs, args.log_format, args.burst, args.window,
                                 args.jobs, args.redact, _say)
    for info in result.files:
        if info.damaged:
            print(f"perflab: warning: {info.path}: {info.damaged}; the report covers "
                  f"the {info.events:,} events read before it", file=sys.stderr)
    print({"text": digest_render.render_text, "json": digest_render.render_json,
           "html": digest_render.render_html}[args.format](result, args.top))
    if args.workload:
        written = write_workload(result, args.workload, args.top, literals=not args.redact)
        print(f"wrote {args.workload}: {written} statements", file=sys.stderr)
    return 0


def cmd_studies(args: argparse.Namespace) -> int:
    for name in builtin_names():
        print(f"{name:24} {builtin_description(name)}")
    return 0


def cmd_servers(args: argparse.Namespace) -> int:
    from perflab.server import builds

    if args.action != "list" and not args.names:
        raise PerflabError(f"perflab servers {args.action} needs the builds to {args.action}",
                           hint=f"offered: {', '.join(builds.OFFERS)}")
    for name in [builds.offer(name).name for name in args.names]:  # all checked first
        if args.action == "add":
            print(f"{name}: {builds.install(name, lambda line: print(line, flush=True)).version()}")
        elif args.action == "remove":
            print(f"removed {name} ({builds.remove(name)})")
    if args.action == "list":
        print("\n".join(builds.listing()))
    return 0


def cmd_env(args: argparse.Namespace) -> int:
    if not args.path.exists():
        raise PerflabError(f"--path {args.path} does not exist",
                           hint="give an existing directory: where a lab's datadir would live")
    print(json.dumps(host_facts(args.path), indent=2))
    return 0


def _check_output(option: str, path: Path | None, directory: bool = False) -> None:
    """Fail before any work, not after it, when an output FILE or DIR cannot be written (None:
    the option was not given)."""
    if path is None:
        return
    kind = "directory" if directory else "file"
    if path.exists():
        if path.is_dir() != directory:
            raise PerflabError(f"{option} {path} is not a {kind}",
                               hint=f"give {option} a {kind} name")
        where = path
    else:
        if directory:  # made with its parents: the nearest existing one must be a directory
            where = next(p for p in path.absolute().parents if p.exists())
        else:
            where = path.parent
            if not where.exists():
                raise PerflabError(f"{option} {path}: directory {where} does not exist",
                                   hint=f"create it first (mkdir -p {where}), or write elsewhere")
        if not where.is_dir():
            raise PerflabError(f"{option} {path}: {where} is not a directory",
                               hint=f"give {option} a path under a directory")
    if not os.access(where, os.W_OK):
        raise PerflabError(f"{option} {path}: {where} is not writable",
                           hint=f"give {option} a path you can write to")


def _thread_list(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of thread counts: {text!r}") from None


def _name_list(text: str) -> tuple[str, ...]:
    names = tuple(part.strip() for part in text.split(",") if part.strip())
    if not all(name.replace("_", "").replace("-", "").isalnum() for name in names):
        raise argparse.ArgumentTypeError(f"not a list of server variable names: {text!r}")
    return names


def _positive(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _say(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {message}", file=sys.stderr, flush=True)


def _indent(text: str) -> str:
    return "\n".join(f"  | {line}" for line in text.splitlines())


if __name__ == "__main__":
    sys.exit(main())
