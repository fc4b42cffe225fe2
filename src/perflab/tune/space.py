"""The knob space of `perflab tune`, read from the server itself, and its safety rules.

Types, limits, enum values and whether a knob needs a restart come from
information_schema.SYSTEM_VARIABLES (server/variables.py). perflab adds only what the server
cannot say: a sensible search range for the curated knobs (the MySQL 5.5 sysbench tuning study's
list, the STAR notes' buffers, and the MyISAM key cache of the key-buffer contention and
segmented key cache pages, in their MariaDB 10.11 form), which sizes are searched on a log
scale, which knobs trade durability for speed, and which storage engine a knob belongs to: the
curated knobs of engines with no tables in the study are left out. `Space` is the knobs as
every method reads them: their values left unset (the startup values), their Optuna
distributions, and the memory rule a proposal must keep.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation
from enum import StrEnum

from optuna.distributions import BaseDistribution, CategoricalDistribution, IntDistribution

from perflab.domain import Scalar, normalize_variable_name
from perflab.errors import PerflabError
from perflab.probes.system import ram_bytes
from perflab.server.variables import INTEGER_TYPES, Catalog, VariableSpec

K, M, G = 1 << 10, 1 << 20, 1 << 30

# name: (low, high, log scale) for numbers; None for ENUM/BOOLEAN (choices from the server).
# A knob the server does not have is left out. Of the sysbench tuning study's list,
# innodb_buffer_pool_instances and innodb_thread_concurrency are gone from MariaDB 10.11,
# innodb_max_dirty_pages_pct acts on flushing under writes (searched when named), and
# transaction isolation changes what the application sees, so it is not a speed knob. The STAR
# notes' maintenance buffers (myisam_sort_buffer_size, preload_buffer_size,
# bulk_insert_buffer_size) serve REPAIR and ALTER, LOAD INDEX and bulk inserts, not queries.
CURATED: dict[str, tuple[int, int, bool] | None] = {
    "innodb_buffer_pool_size": (32 * M, 4 * G, True),
    "innodb_log_file_size": (16 * M, 2 * G, True),
    "innodb_log_buffer_size": (2 * M, 256 * M, True),
    "innodb_io_capacity": (100, 20000, True),
    "innodb_read_io_threads": (1, 16, False),
    "innodb_write_io_threads": (1, 16, False),
    "innodb_flush_method": None,
    "innodb_adaptive_hash_index": None,
    "innodb_change_buffering": None,
    "innodb_spin_wait_delay": (2, 100, True),  # and 0, no delay (ZERO_OFF)
    "innodb_purge_threads": (1, 32, False),
    "innodb_old_blocks_pct": (5, 95, False),
    "innodb_max_purge_lag": (0, 1_000_000, False),
    "innodb_read_ahead_threshold": (0, 64, False),
    "innodb_random_read_ahead": None,
    "innodb_stats_on_metadata": None,
    "performance_schema": None,
    "table_open_cache": (64, 16384, True),
    "table_definition_cache": (400, 16384, True),
    "thread_cache_size": (8, 1024, True),  # and 0, no cache (ZERO_OFF)
    "thread_handling": None,
    "thread_pool_size": (1, 64, False),
    "thread_pool_stall_limit": (10, 1000, True),
    "query_cache_type": None,
    "query_cache_size": (1 * M, 256 * M, True),  # and 0, off (ZERO_OFF)
    "key_buffer_size": (8 * M, 1 * G, True),  # and 0, "off" (ZERO_OFF)
    "key_cache_segments": (2, 64, True),  # and 0, one unsegmented cache (ZERO_OFF)
    "key_cache_division_limit": (1, 100, False),
    "key_cache_age_threshold": (100, 30000, True),
    "key_cache_block_size": (512, 16 * K, True),
    "aria_pagecache_buffer_size": (8 * M, 1 * G, True),
    "aria_pagecache_division_limit": (1, 100, False),
    "aria_pagecache_age_threshold": (100, 30000, True),
    "sort_buffer_size": (32 * K, 16 * M, True),
    "join_buffer_size": (128 * K, 16 * M, True),
    "read_buffer_size": (8 * K, 8 * M, True),
    "read_rnd_buffer_size": (8 * K, 16 * M, True),
    "tmp_table_size": (1 * M, 256 * M, True),
    "max_heap_table_size": (1 * M, 256 * M, True),
}

# Numbers whose 0 switches a feature off, below their searched range (a log scale, which has no
# 0): the lowest positions of the range (ZERO_BAND of it) mean 0, so that every method and
# sampler reaches "off" as often as any other band. MyISAM with key_buffer_size = 0 reads index
# blocks through the OS cache and takes no key cache lock: +54% to +69% at 2-16 threads on the
# key-buffer contention page's join. On a linear 0..1024 (thread_cache_size) or 0..256 MiB
# (query_cache_size) a sampler drew 0 about never.
ZERO_OFF = {"key_buffer_size", "query_cache_size", "thread_cache_size", "key_cache_segments",
            "innodb_spin_wait_delay"}
ZERO_BAND = 0.15

# A named knob without a curated range whose server range spans more than WIDE times its low
# end is searched on a log scale up to SPAN times its startup value (uncurated_range):
# myisam_sort_buffer_size, binlog_cache_size and innodb_lru_scan_depth go to 2^64.
# Such a knob starting at 0 (binlog_commit_wait_count) is zero-off: its lowest band is 0.
WIDE, SPAN = 1000, 256
NO_LIMIT = 1 << 56  # a startup value this large is a limit left off (sql_select_limit)
# A DOUBLE is searched on its whole numbers when its range holds this many or more of them
# (the percentages of innodb_max_dirty_pages_pct, innodb_adaptive_flushing_lwm).
WHOLE_STEPS = 10

# Knobs that act only together, searched as one: the follower takes its leader's value. The
# in-memory limit of a temporary table is the smaller of tmp_table_size and max_heap_table_size,
# so raising either alone does nothing (a GROUP BY whose 33 MB temporary table spilled to disk:
# +0.6% and +6.2% alone, +172% together; bench/answers/tmp_table.toml's 24 MB one: +1.8% and
# +3.1% alone, +53% together), and a search moving one knob at a time would never find it.
LINKED = {"max_heap_table_size": "tmp_table_size"}  # follower: leader

# The storage engine a knob belongs to, by name (else: the server's, whatever the engine).
ENGINE_PREFIXES = (("innodb_", "InnoDB"), ("key_buffer_size", "MyISAM"), ("key_cache_", "MyISAM"),
                   ("myisam_", "MyISAM"), ("aria_", "Aria"), ("rocksdb_", "RocksDB"))
# Knobs that matter only when another knob may take a value: the thread pool's, when
# thread_handling is searched and may be pool-of-threads.
NEEDS = {"thread_pool_size": ("thread_handling", "pool-of-threads"),
         "thread_pool_stall_limit": ("thread_handling", "pool-of-threads")}


def engine_of(name: str) -> str | None:
    """The storage engine whose knob `name` is, or None for a knob of the whole server."""
    return next((engine for prefix, engine in ENGINE_PREFIXES if name.startswith(prefix)), None)


# Knobs that buy speed with the safety of committed data: excluded unless allowed explicitly.
DURABILITY = {
    "innodb_flush_log_at_trx_commit", "innodb_doublewrite", "sync_binlog",
    "innodb_flush_log_at_timeout", "sync_frm", "sync_master_info", "sync_relay_log",
    "sync_relay_log_info", "innodb_flush_method_nosync",
}
# Variables fixed when a data directory is created: a trial's server started with another
# value refuses the study's prepared data (innodb_page_size = 4096 failed to start on it).
FIXED_AT_CREATION = {
    name: f"is fixed when the data directory is created ({what}): a server started with "
          "another value refuses the study's prepared data"
    for name, what in (("innodb_page_size", "InnoDB's files are written in its pages"),
                       ("lower_case_table_names", "table names are stored in its case"))}
# Enum values that are unsafe in the same sense.
UNSAFE_CHOICES = {"innodb_flush_method": {"nosync", "littlesync", "O_DIRECT_NO_FSYNC"},
                  # every MyISAM table's index blocks left unflushed after writes: a crash
                  # leaves indexes to repair
                  "delay_key_write": {"ALL"}}


class KnobKind(StrEnum):
    """The values a knob takes."""

    INT = "int"  # a whole number in [low, high]
    CHOICE = "choice"  # one of its choices (an ENUM or BOOLEAN variable)


@dataclass(frozen=True)
class Knob:
    name: str
    kind: KnobKind
    low: int = 0
    high: int = 0
    log: bool = False
    choices: tuple[str, ...] = ()
    dynamic: bool = False
    durability: bool = False
    zero_off: bool = False  # 0 switches it off: the lowest ZERO_BAND of the positions
    followers: tuple[str, ...] = ()  # variables set to this knob's value with it (LINKED)

    def describe(self) -> str:
        if self.kind == KnobKind.CHOICE:
            return f"{self.name} in {{{', '.join(self.choices)}}}"
        scale = "log" if self.log else "linear"
        off = "0 (off) or " if self.zero_off else ""
        also = f" (and {', '.join(self.followers)} with it)" if self.followers else ""
        return f"{self.name}{also} in {off}[{self.low}, {self.high}] ({scale})"

    def within(self, value, otherwise):
        """`value` inside this knob's range: a number clamped into it, a choice it does not
        offer replaced by `otherwise`."""
        if self.kind == KnobKind.CHOICE:
            return value if str(value) in self.choices else otherwise
        if self.zero_off and int(value) == 0:
            return 0
        return min(max(int(value), self.low), self.high)

    def same(self, a, b) -> bool:
        """Whether two values are one setting of this knob (a number however it is typed)."""
        return str(a) == str(b) if self.kind == KnobKind.CHOICE else int(a) == int(b)

    @property
    def drawn_low(self) -> int:
        """The low end of the samplers' range. Optuna has no 0 on a log scale, so a zero-off
        knob's range reaches below its own by ZERO_BAND of the log scale (as its positions do),
        and a draw there stands for 0: every sampler reaches "off" as often as any other band."""
        if not self.zero_off:
            return self.low
        span = math.log(self.high) - math.log(self.low)
        return max(1, math.floor(self.low * math.exp(-span * ZERO_BAND / (1 - ZERO_BAND))))

    def drawn(self, value, otherwise):
        """A sampler's draw, or a trial's stored value, as the setting it stands for: a
        zero-off knob's value below its range is 0; otherwise as `within`."""
        if self.zero_off and 0 <= int(value) < self.low:
            return 0
        return self.within(value, otherwise)

    def to_draw(self, value):
        """A setting as the samplers' range holds it (the inverse of `drawn`)."""
        return self.drawn_low if self.zero_off and int(value) == 0 else value

    def position(self, value) -> float:
        """A number's place in the search range, 0..1, on the knob's scale (log or linear)."""
        v = int(value)
        if self.zero_off:
            return 0.0 if v == 0 else ZERO_BAND + (1 - ZERO_BAND) * self._on_position(v)
        return self._on_position(v)

    def _on_position(self, v: int) -> float:
        if self.high == self.low:
            return 0.0
        if self.log:
            return (math.log(v) - math.log(self.low)) / (math.log(self.high) - math.log(self.low))
        return (v - self.low) / (self.high - self.low)

    def value_at(self, position: float) -> int:
        """The number at a place of the search range, 0..1 (clipped into it), on its scale."""
        u = min(max(position, 0.0), 1.0)
        if self.zero_off:
            if u < ZERO_BAND:
                return 0
            u = (u - ZERO_BAND) / (1 - ZERO_BAND)
        if self.log:
            value = math.exp(math.log(self.low) + u * (math.log(self.high) - math.log(self.low)))
        else:
            value = self.low + u * (self.high - self.low)
        return min(max(round(value), self.low), self.high)


def knob_space(catalog: Catalog, names: list[str] | None = None, allow_unsafe: bool = False,
               engines: set[str] | None = None, say: Callable[[str], None] | None = None,
               exclude: list[str] | None = None, fixed: Mapping[str, Scalar] | None = None
               ) -> list[Knob]:
    """The knobs to search: the user's names (all of them), or the curated set the server has,
    less `exclude` and the knobs of engines that hold none of the study's tables (`engines`;
    None: every engine), saying in a line to `say` which were left out for their engine, the
    engines' own knobs first. `fixed`: the variables every trial runs with (the baseline's)."""
    # as a my.cnf or the command line spells them (key-buffer-size), each once
    names = list(dict.fromkeys(map(normalize_variable_name, names or ())))
    exclude = list(dict.fromkeys(map(normalize_variable_name, exclude or ())))
    if names and exclude:
        raise PerflabError("tune.exclude leaves out curated knobs, and tune.knobs (or --knobs) "
                           "names the knobs to search exactly",
                           hint="give one of them: the knobs to search, or those to leave out")
    for name in exclude or ():
        catalog.spec(name, "tune.exclude")  # a misspelt name is an error, not a no-op
    wanted = names or [n for n in CURATED if n in catalog.variables and n not in (exclude or ())]
    if not names and engines is not None:
        foreign = [n for n in wanted if engine_of(n) not in (None, *engines)]
        if foreign and say is not None:
            by_engine: dict[str, list[str]] = {}
            for name in foreign:
                engine = engine_of(name)
                assert engine is not None  # a foreign knob is some engine's
                by_engine.setdefault(engine, []).append(name)
            say("knobs left out, their engine holds none of the study's tables: " + "; ".join(
                f"{engine} ({len(found)}: {', '.join(found)})" for engine, found in
                by_engine.items()) + "; name them in [tune] knobs or --knobs to search them")
        wanted = [n for n in wanted if n not in foreign]
    if not names:  # the engine's own knobs first: one-factor tries them first
        wanted.sort(key=lambda name: engine_of(name) is None)
    knobs = []
    for name in wanted:
        spec = catalog.spec(name, "tune.knobs")
        why_not = not_a_knob(spec)
        if why_not:
            if names:
                raise PerflabError(f"tune.knobs: {name} {why_not}",
                                   hint=f"remove {name} from tune.knobs")
            continue
        durability = name in DURABILITY
        if durability and not allow_unsafe:
            if names:
                raise PerflabError(
                    f"tune.knobs: {name} trades durability for speed",
                    hint="allow unsafe knobs to search it anyway; the report will mark it",
                    option="allow_unsafe",
                )
            continue
        knobs.append(_knob(name, spec, CURATED.get(name), allow_unsafe, durability))
    fixed = {normalize_variable_name(name): value for name, value in (fixed or {}).items()}
    knobs = _linked(knobs if names else _acting(knobs, fixed, say))
    if say is not None:  # one of a pair named, or the other excluded from the curated set
        for note in half_linked(variable_names(knobs), fixed):
            say(note)
    if not knobs:
        raise PerflabError("tune: no knob to search",
                           hint='name the knobs in the plan: [tune] knobs = ["key_buffer_size"]')
    return knobs


def _linked(knobs: list[Knob]) -> list[Knob]:
    """The knobs with each follower whose leader is searched too folded into it (LINKED); the
    leader's description names it."""
    followers = folded({k.name for k in knobs})
    return [replace(k, followers=tuple(f for f, leader in followers.items() if leader == k.name))
            for k in knobs if k.name not in followers]


def folded(names: Collection[str]) -> dict[str, str]:
    """The LINKED pairs searched as one knob, both among the variables `names`: follower ->
    leader."""
    return {follower: leader for follower, leader in LINKED.items()
            if follower in names and leader in names}


def variable_names(knobs: list[Knob]) -> list[str]:
    """The variables `knobs` set: each knob's name, then its followers'."""
    return [name for k in knobs for name in (k.name, *k.followers)]


def half_linked(names: list[str], fixed: Mapping[str, Scalar] | None = None) -> list[str]:
    """A line for each pair of LINKED knobs of which only one is among the searched variables
    `names`: searched alone, it acts only where the other one, left at the value the trials
    run it with (`fixed`, else its startup value), does not bound it."""
    notes = []
    for follower, leader in LINKED.items():
        if (follower in names) != (leader in names):
            named, other = (leader, follower) if leader in names else (follower, leader)
            held = (f"left at the baseline's {fixed[other]}" if fixed and other in fixed
                    else "left at its startup value")
            notes.append(f"{named} is searched alone: {other}, {held}, bounds it (the smaller "
                         f"of the two is the limit); search {other} too (name it in "
                         "tune.knobs, or do not exclude it) to search them as one knob")
    return notes


def _acting(knobs: list[Knob], fixed: Mapping[str, Scalar], say: Callable[[str], None] | None
            ) -> list[Knob]:
    """The curated knobs less those that act only where no trial runs (NEEDS), said."""
    idle = [k.name for k in knobs if not _needed(k, knobs, fixed)]
    if idle and say is not None:
        say("knobs left out, no trial runs what they act on: " + "; ".join(
            f"{name} (only with {NEEDS[name][0]} = {NEEDS[name][1]})" for name in idle))
    return [k for k in knobs if k.name not in idle]


def _needed(knob: Knob, knobs: list[Knob], fixed: Mapping[str, Scalar]) -> bool:
    """A curated knob that matters only when another variable takes a value: whether a trial
    may run it so, the other searched with that choice, or fixed at it when not searched."""
    if knob.name not in NEEDS:
        return True
    other, value = NEEDS[knob.name]
    searched = next((k for k in knobs if k.name == other), None)
    if searched is not None:
        return value in searched.choices
    return str(fixed.get(other, "")).lower() == value


def not_a_knob(spec: VariableSpec) -> str | None:
    """Why a server variable cannot be searched by trials that each start a server on the
    study's prepared data, or None: it cannot be given at start, it is fixed when the data
    directory is created, or the server lists none of the values it takes."""
    if spec.command_line is None:
        return "cannot be set at server start (the server reads it only from itself)"
    if spec.name in FIXED_AT_CREATION:
        return FIXED_AT_CREATION[spec.name]
    if spec.type in ("ENUM", "BOOLEAN") and not spec.values:
        return ("takes values the server does not list (a character set, a collation, a "
                "locale): perflab searches numbers and listed choices")
    if spec.type not in (*INTEGER_TYPES, "DOUBLE", "ENUM", "BOOLEAN"):  # MySQL's catalog
        return (f"is a {spec.type} (the server lists no choices for it): perflab searches "
                "numbers and listed choices")  # names innodb_flush_method's type only
    return None


def _knob(name, spec, curated, allow_unsafe: bool, durability: bool) -> Knob:
    dynamic = spec.dynamic
    if spec.type in ("ENUM", "BOOLEAN"):
        unsafe = set() if allow_unsafe else UNSAFE_CHOICES.get(name, set())
        choices = tuple(v for v in spec.values if v not in unsafe)
        if name == "thread_handling":
            choices = tuple(v for v in choices if v != "no-threads")  # one connection only
        return Knob(name, KnobKind.CHOICE, choices=choices, dynamic=dynamic,
                    durability=durability)
    low, high, start = _numeric_range(name, spec)
    log = zero = False
    if curated:
        low, high, log = max(low, curated[0]), min(high, curated[1]), curated[2]
    elif high > WIDE * max(low, 1):
        low, high, log, zero = uncurated_range(low, high, start)
    # see drawn_low: a log range from 1 would leave no whole number below it to stand for 0
    zero_off = zero or (name in ZERO_OFF and _whole(spec.minimum) <= 0 and low >= 2 and log)
    return Knob(name, KnobKind.INT, low, high, log and low > 0, (), dynamic, durability,
                zero_off)


def _numeric_range(name: str, spec: VariableSpec) -> tuple[int, int, int]:
    """(low, high, startup value) of a number the server takes: an integer's, or a DOUBLE's
    whole numbers (innodb_max_dirty_pages_pct: 0 to 99, starting at 90), or why not, refused:
    another type, no global value or one that is not a number, a limit left off, or a DOUBLE
    with fewer than WHOLE_STEPS whole numbers in its range or starting between two
    (innodb_defragment_fill_factor, 0.7 to 1 from 0.9), where a search on whole numbers would
    move it off its default and back."""
    def refuse(why: str) -> PerflabError:
        return PerflabError(f"tune.knobs: {name} {why}", hint=f"remove {name} from tune.knobs")

    if spec.type not in (*INTEGER_TYPES, "DOUBLE"):
        raise refuse(f"is a {spec.type}; perflab tunes integers, decimals on their whole "
                      "numbers, booleans and enums")
    startup = spec.startup_value
    if startup is None:
        raise refuse("has no global value to start from (a session's own)")
    try:
        exact = Decimal(startup)
    except InvalidOperation:
        exact = Decimal("NaN")
    if not exact.is_finite():
        raise refuse(f"starts at {startup!r}, which is not a number")
    low, high = _whole(spec.minimum, math.ceil), _whole(spec.maximum, math.floor)
    start = int(exact)
    if spec.type == "DOUBLE" and (high - low < WHOLE_STEPS or exact != start):
        raise refuse(f"takes decimals from {spec.minimum} to {spec.maximum} and starts at "
                     f"{startup}: perflab searches a decimal on its whole numbers, which needs "
                     f"{WHOLE_STEPS} or more of them and a whole startup value")
    if start >= NO_LIMIT:
        raise refuse("starts at its type's maximum, no limit: lower, it makes statements fail "
                     "or return less, not run faster")
    return low, high, start


def _whole(text: str | None, rounding: Callable[[Decimal], int] = int) -> int:
    """A number as the server prints it ("90.000000" for a DOUBLE's 90, 2^64 - 1 exactly) as a
    whole number, `rounding` what lies between two."""
    return rounding(Decimal(text or 0))


def uncurated_range(low: int, high: int, start: int | None) -> tuple[int, int, bool, bool]:
    """(low, high, log scale, zero-off) of a named knob without a curated range, whose server
    range spans more than WIDE times its low end (most go to 2^64: "no limit"), so that a
    search covers its useful decades, its startup value among them, instead of the top half
    of 2^64: a log scale from its least positive value to SPAN times a positive startup value;
    for a startup of 0 (off, or unlimited) a log scale to 2^32 whose lowest ZERO_BAND stands
    for 0 (as ZERO_OFF's); else (a negative or unknown startup, `start`) the server's range up
    to 2^32, linear."""
    if start is not None and start > 0:
        low = min(max(low, 1), start)
        return low, min(high, max(start, low) * SPAN), True, False
    if start == 0:  # from the value below which ZERO_BAND of the draws lie: 0, left unset
        top = min(high, 1 << 32)
        return max(2, int(top ** ZERO_BAND)), top, True, True
    return low, min(high, max(1 << 32, low * WIDE)), False, False


def memory_budget(share: float = 0.5) -> int:
    """A share of this machine's RAM."""
    return int(ram_bytes() * share)


def startup_values(knobs: list[Knob], catalog: Catalog) -> dict:
    """Each knob at the server's startup value, clamped into its search range."""
    printed = {knob.name: catalog.variables[knob.name].startup_value for knob in knobs}
    return {knob.name: knob.within(_startup_number(knob, printed[knob.name]),
                                   knob.choices[0] if knob.kind == KnobKind.CHOICE else None)
            for knob in knobs}


def _startup_number(knob: Knob, text: str | None):
    """A value the server printed as this knob holds its values: a number's whole number."""
    return text if knob.kind == KnobKind.CHOICE or text is None else _whole(text)


def setting_key(params: dict) -> tuple:
    """A setting in a form that compares equal however its values were typed."""
    return tuple(sorted((k, str(v)) for k, v in params.items()))


@dataclass(frozen=True)
class Space:
    """The knobs, the values a trial leaves unset (the server's startup values, within the
    ranges), and the memory rule every proposal must keep."""

    knobs: tuple[Knob, ...]
    defaults: dict
    memory: Callable[[dict], int]  # worst-case bytes of a setting
    limit: int  # bytes

    def distributions(self) -> dict[str, BaseDistribution]:
        return {k.name: CategoricalDistribution(k.choices) if k.kind == KnobKind.CHOICE
                else IntDistribution(k.drawn_low, k.high, log=k.log) for k in self.knobs}

    def draws(self, params: dict) -> dict:
        """A setting as the samplers hold it: a zero-off knob's 0 at the low end of its
        drawn range (`Knob.to_draw`), for a trial a method fixes (one-factor, additive)."""
        knobs = {k.name: k for k in self.knobs}
        return {name: knobs[name].to_draw(value) if name in knobs else value
                for name, value in params.items()}

    def fits(self, params: dict) -> bool:
        return self.memory(params) <= self.limit

    def moved(self, params: dict) -> list[Knob]:
        return [k for k in self.knobs if not k.same(params[k.name], self.defaults[k.name])]

    def within(self, params: dict) -> dict:
        """A trial's `params` as the setting measured: each knob's value within today's range
        (a number clamped into it, a zero-off knob's draw below its range 0, a choice no longer
        offered replaced by the default), its followers set to it; a name that is not a knob
        kept as it is."""
        knobs = {k.name: k for k in self.knobs}
        setting = {name: knobs[name].drawn(value, self.defaults[name]) if name in knobs
                   else value for name, value in params.items()}
        for name, value in list(setting.items()):
            if name in knobs:
                setting.update(dict.fromkeys(knobs[name].followers, value))
        return setting

    def complete(self, params: dict) -> dict:
        """A trial's params over the defaults, within today's ranges: a trial of a study whose
        knobs have changed since may lack some, or hold a value out of range or a choice no
        longer offered (`within`)."""
        return {**self.defaults, **{name: value for name, value in self.within(params).items()
                                    if name in self.defaults}}
