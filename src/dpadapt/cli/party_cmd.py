"""``dpadapt release METHOD`` and ``dpadapt adapt METHOD``: the two party steps, one process each.

``release`` (the data owner): load the data file, ask the method to *plan* its release (the
Guarantee is known before any noise is drawn), reserve the spend in the owner's privacy ledger
(refused if over budget), draw the noise, write the Release file atomically, commit the spend.

``adapt`` (the receiver): load and verify the other party's Release file(s), check the feature
dimension, run the method's adaptation on the receiver's own data, save the model with its
guarantees (:mod:`dpadapt.modelio`: arrays + JSON, never a pickle), and — for methods with a
return leg — release back to the other party through the same budgeted path.

``--sign KEY`` signs what a party writes (releases, models) with its Ed25519 private key;
``--trust PUBKEY`` (repeatable) makes ``adapt`` accept only releases signed by one of those keys.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import math
import os
import sys
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpadapt import container, keys, modelio
from dpadapt.cli.agreement import CLASS_NAMES_PARAM, check_agreement, owner_params
from dpadapt.cli.main import add_command
from dpadapt.cli.methods import MethodCommands, PlannedRelease, load_plugins, methods
from dpadapt.cli.table_options import add_table_arguments, load_data, step

if TYPE_CHECKING:  # the privacy core, the ledger and the readers are imported when a command runs, not for --help
    from dpadapt.cli.table_options import StreamTable as Table
    from dpadapt.privacy.guarantee import Guarantee
    from dpadapt.privacy.ledger import Ledger
    from dpadapt.release import Release

SEED_HELP = ("seed of the PUBLIC randomness (projections, partitions; default: fresh); "
             "privacy noise comes from fresh OS entropy")
#: Parameter the driver adds to every Release: the owner's feature dimension.
N_FEATURES_PARAM = "owner_n_features"


def file_sha256(path: str) -> str | None:
    """The SHA-256 of a data file (``None`` when it cannot be read): recorded at adapt, compared at score."""
    import hashlib

    try:
        with open(path, "rb") as fh:
            return hashlib.file_digest(fh, "sha256").hexdigest()
    except OSError:
        return None


def add_parser(sub: argparse._SubParsersAction) -> None:
    registered = methods()
    rp, rsub = add_command(
        sub,
        "release",
        (
            "Plan the release (its privacy cost is known before any noise is drawn), check it against "
            "your privacy budget for this dataset (`dpadapt budget`), then write the Release file."
        ),
        actions="method",
    )
    ap, asub = add_command(
        sub,
        "adapt",
        "Verify the release file(s), adapt on your own data, save the model (arrays + JSON, no pickle) with its privacy guarantees.",
        actions="method",
    )
    for name, commands in registered.items():
        p = rsub.add_parser(name, help=commands.help, conflict_handler="resolve")
        _add_release_common(p)
        commands.add_release_arguments(p)
        p.set_defaults(func=run_release, method_name=name)
        q = asub.add_parser(name, help=commands.help, conflict_handler="resolve")
        _add_adapt_common(q)
        commands.add_adapt_arguments(q)
        q.set_defaults(func=run_adapt, method_name=name)
    for parser in (rp, ap):
        parser.set_defaults(func=lambda args, parser=parser: _no_method(parser, registered))


def _no_method(parser: argparse.ArgumentParser, registered: dict[str, MethodCommands]) -> int:
    if not registered:
        print(f"{parser.prog}: no method is registered in this installation", file=sys.stderr)
    else:
        parser.print_help(sys.stderr)
    return 2


def _add_ledger_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--ledger", help="privacy-budget ledger file (default: $DPADAPT_LEDGER or the user data dir)")
    p.add_argument("--dataset-id", help="name of the dataset in the ledger (default: SHA-256 of the data file)")
    p.add_argument("--party", help="party name in the ledger (default: the protected party, source or target)")
    p.add_argument("--force", action="store_true", help="overwrite an existing output file")
    p.add_argument(
        "--declare-public",
        action="store_true",
        help="these data are public: a release without privacy guarantee (ε = ∞) is allowed and not charged to a budget",
    )
    p.add_argument("--sign", metavar="KEY", help="sign what you write with this Ed25519 private key (dpadapt keys new)")
    add_table_arguments(p)


def add_disclosure_arguments(p: argparse.ArgumentParser) -> None:
    """``--ledger``/``--dataset-id``/``--party``/``--declare-public`` of a command that discloses an
    un-noised summary of its data (``dpadapt request``, ``dpadapt slices``)."""
    p.add_argument("--ledger", help="privacy-budget ledger file (default: $DPADAPT_LEDGER or the user data dir)")
    p.add_argument("--dataset-id", help="name of the dataset in the ledger (default: SHA-256 of the data file)")
    p.add_argument("--party", help="your party name in the ledger (default: the party this summary describes)")
    p.add_argument("--declare-public", action="store_true",
                   help="these data are public: disclose the un-noised summary even though the ledger has a budget for them")


def add_receiver_disclosure(p: argparse.ArgumentParser, out_help: str) -> None:
    """The options of a receiver's un-noised summary of its own table (``dpadapt request``):
    the output file, the disclosure options and the table options; ``run`` set as the command."""
    p.add_argument("--out", required=True, help=out_help)
    p.add_argument("--force", action="store_true", help="overwrite an existing output file")
    add_disclosure_arguments(p)
    add_table_arguments(p)


def open_receiver_disclosure(args: argparse.Namespace) -> tuple[Any, Path]:
    """The receiver's table (read through :func:`load_data`) and its checked output path, after refusing a
    disclosure of data the ledger holds a budget for (:func:`check_disclosure`)."""
    table = load_data(args)
    check_disclosure(args, args.data, "target")
    return table, _check_out(args.out, args.force)


def check_disclosure(args: argparse.Namespace, data: str, party: str) -> None:
    """Refuse an un-noised disclosure (ε = ∞) of a dataset the ledger holds a privacy budget for, unless
    ``--declare-public``: like ``release``, nothing without a guarantee leaves a
    protected dataset silently. A missing ledger file holds no budget (and is not created)."""
    from dpadapt.privacy.ledger import Ledger, default_path, fingerprint, short_id

    if getattr(args, "declare_public", False):
        return
    path = Path(args.ledger) if getattr(args, "ledger", None) else default_path()
    if not path.exists():
        return
    name = args.party or party
    dataset_id = args.dataset_id or fingerprint(data)
    if Ledger(path).budget(name, dataset_id) is not None:
        raise ValueError(
            f"the {name} party has a privacy budget for {short_id(dataset_id)} in {path}: this command discloses an "
            "un-noised summary of those data (ε = ∞); refused. If these data are public, pass --declare-public"
        )


def add_trust_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--trust", action="append", default=[], metavar="PUBKEY",
        help="accept only files signed by this public key (repeatable); without it, signatures are reported but not required",
    )


def trusted_keys(args: argparse.Namespace) -> list[Any]:
    return [keys.load_public_key(p) for p in getattr(args, "trust", None) or []]


def sign_key(args: argparse.Namespace) -> Any:
    path = getattr(args, "sign", None)
    return keys.load_private_key(path) if path else None


def _add_release_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", required=True, help="your data file (.npz dense/CSR, .npy with --label-file, .csv, .parquet), read chunk by chunk")
    p.add_argument("--label-column", default="y", help="label column of a .csv/.parquet file (default y)")
    p.add_argument("--epsilon", type=float, required=True, help="ε of this release")
    p.add_argument("--delta", type=float, required=True, help="δ of this release (≪ 1/n)")
    p.add_argument("--out", required=True, help="Release file to write (give it to the other party)")
    p.add_argument("--seed", type=int, default=None, help=SEED_HELP)
    p.add_argument("--rows-per-patient", type=int, default=None, metavar="K",
                   help="a patient may have several rows (by the schema's ID column): keep at most K rows per patient "
                        "and make the guarantee per patient (the noise is scaled to K rows); without it, repeated IDs are refused")
    _add_ledger_arguments(p)


def _add_adapt_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--release", action="append", default=[], help="the other party's Release file (repeatable)")
    p.add_argument("--own-release", action="append", default=[], metavar="RELEASE",
                   help="a Release file you wrote yourself, e.g. your request from `dpadapt request` (repeatable): "
                        "integrity-checked, but not required to be signed by a --trust key")
    p.add_argument("--data", required=True, help="your data file (.npz dense/CSR, .npy with --label-file, .csv, .parquet), read chunk by chunk")
    p.add_argument("--label-column", default="y", help="label column of a .csv/.parquet file (default y)")
    p.add_argument("--out", required=True, help="model file to write (arrays + JSON; read it with dpadapt predict/score/report)")
    p.add_argument("--return-release", default=None, help="Release file for the return leg (methods that send one back)")
    p.add_argument("--epsilon", type=float, default=None, help="ε of the return release (methods with a return leg)")
    p.add_argument("--delta", type=float, default=None, help="δ of the return release")
    p.add_argument("--seed", type=int, default=None, help=SEED_HELP)
    p.add_argument("--decision", default=None, metavar="RULE", help=DECISION_HELP)
    add_prevalence_argument(p, "default: dpadapt.prevalence.DEFAULT, chosen in benchmarks/decisions")
    _add_ledger_arguments(p)
    add_trust_argument(p)


# -- release ----------------------------------------------------------------------------------


#: The largest ε a release is calibrated for: beyond LARGE_EPSILON (10) a guarantee already protects nothing
#: meaningful, and noise calibration loses its precision far above this.
MAX_EPSILON = 1e4


def check_release_epsilon(epsilon: float) -> float:
    """ε of a release: finite, > 0 and at most :data:`MAX_EPSILON` (one line saying what to do otherwise)."""
    from dpadapt.privacy.guarantee import LARGE_EPSILON
    from dpadapt.validation import check_epsilon

    check_epsilon(epsilon)
    if epsilon > MAX_EPSILON:
        raise ValueError(f"--epsilon {epsilon:g} is more than dpadapt calibrates noise for (ε ≤ {MAX_EPSILON:g}); above "
                         f"ε = {LARGE_EPSILON:g} a guarantee is already no meaningful protection. If the data are "
                         "public, release them without noise with --declare-public")
    return epsilon


def run_release(args: argparse.Namespace) -> int:
    from dpadapt.privacy.guarantee import LARGE_EPSILON, LARGE_EPSILON_WORDS
    from dpadapt.release import Release
    from dpadapt.validation import check_delta

    commands = methods()[args.method_name]
    check_release_epsilon(args.epsilon)
    check_delta(args.delta)
    key = sign_key(args)
    table = bound_rows_per_patient(load_data(args), args.rows_per_patient)
    check_release_delta(args, table, n_units(table) * args.rows_per_patient if args.rows_per_patient else None)
    for option in ("map", "request"):  # the other party's public map / request: computed through the same schema?
        path = getattr(args, option, None)
        if path:  # its header only (no array inflated): the method verifies the whole file, with its own size bound
            meta = container.read_header(path)
            params = meta.get("params") if isinstance(meta.get("params"), dict) else {}
            check_agreement(params, table, args, path, "map", meta.get("version"))
    out = _check_out(args.out, args.force)
    args.sign_key = key
    plan = (group_plan(commands, args, table, args.rows_per_patient) if args.rows_per_patient
            else commands.plan_release(args, table))
    with step(args, f"release {commands.name}"):
        release = budgeted_release(plan, table, args, out, commands.name, requested=(args.epsilon, args.delta))
    with _interrupted_after(f"after {out} was written and its spend committed ({release.guarantee.summary()})"):
        print(f"wrote {out}: {release.method}/{release.kind}, release id {release.release_id}")
        print(f"  {release.guarantee.summary()}")
        if release.guarantee.epsilon > LARGE_EPSILON:
            print(f"warning: {LARGE_EPSILON_WORDS}", file=sys.stderr)
    return 0


def bound_rows_per_patient(table: Table, rows_per_patient: int | None) -> Table:
    """Refuse repeated patient IDs in a protected table, or keep the first K rows of each patient.

    A record-level guarantee protects one row; a patient with two rows would get half the protection.
    Without ``--rows-per-patient`` a repeated ID (the schema's ID column) is refused; with it, each patient
    keeps its first K rows (file order; a rule applied to each patient's own rows) and the release is planned
    per patient (:func:`group_plan`). The counts are printed for this party only.
    """
    import numpy as np

    ids = getattr(table, "ids", None)
    if rows_per_patient is not None and rows_per_patient < 1:
        raise ValueError(f"--rows-per-patient must be ≥ 1, got {rows_per_patient}")
    if ids is None:
        if rows_per_patient is not None:
            raise ValueError(f"{table.path}: --rows-per-patient needs the patients' IDs: read the data through a schema "
                             "that declares the ID column ([id] column = …)")
        return table
    values, inverse, counts = np.unique(np.asarray(ids, dtype=str), return_inverse=True, return_counts=True)
    repeated = counts > 1
    if not repeated.any():
        return table
    if rows_per_patient is None:
        example = str(values[repeated][0])
        raise ValueError(
            f"{table.path}: {int(repeated.sum())} patient ID(s) of column {table.id_column!r} occur on more than one row "
            f"(e.g. {example!r} on {int(counts[repeated][0])} rows): a record-level guarantee would protect such a patient "
            "only partly. Declare --rows-per-patient K (each patient keeps at most K rows and the guarantee is per "
            "patient), or export one row per patient"
        )
    order = np.argsort(inverse, kind="stable")
    first = np.r_[0, np.cumsum(counts)[:-1]]
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size) - np.repeat(first, counts)
    keep = rank < rows_per_patient
    dropped = int((~keep).sum())
    if dropped:
        print(f"note: {table.path}: kept the first {rows_per_patient} row(s) of each of "
              f"{int((counts > rows_per_patient).sum())} patient(s) with more; {dropped} row(s) left out", file=sys.stderr)
        return table.subset(keep)
    return table


#: Release ``params`` that state a number of rows: a patient-level release publishes none of them (the bounded row
#: count tells how many rows one patient has; the number of patients alone is not released either).
ROW_COUNT_PARAMS = ("n_source", "n_target")


def n_units(table: Table) -> int:
    """The number of distinct patients (schema IDs) of a table."""
    import numpy as np

    return int(np.unique(np.asarray(table.ids, dtype=str)).size)


def group_plan(commands: MethodCommands, args: argparse.Namespace, table: Table, rows_per_patient: int) -> PlannedRelease:
    """The method's release planned per patient: at the per-row ε whose per-patient guarantee is ``--epsilon``.

    :func:`dpadapt.privacy.group.per_row_epsilon` searches the per-row ε with the method's own planner (no
    noise is drawn); the release is executed at that plan and carries the per-patient Guarantee
    (:func:`dpadapt.privacy.group.group_guarantee`), which the ledger charges. The release states no row count
    (:data:`ROW_COUNT_PARAMS`): two neighbouring tables, one patient with one row or with K, give release files
    whose every public field is the same.
    """
    from dpadapt.release import Release

    from dpadapt.privacy.group import group_guarantee, per_row_epsilon

    def at(e: float) -> PlannedRelease:
        return commands.plan_release(argparse.Namespace(**{**vars(args), "epsilon": e}), table)

    with warnings.catch_warnings():  # the search plans many trial ε: their warnings are the final plan's, said once below
        warnings.simplefilter("ignore")
        per_row = per_row_epsilon(lambda e: at(e).guarantee, args.epsilon, rows_per_patient)
    planned = at(per_row)
    per_patient = group_guarantee(planned.guarantee, rows_per_patient)

    def execute() -> Release:
        release = planned.execute()
        if not isinstance(release, Release) or release.guarantee.to_dict() != planned.guarantee.to_dict():
            raise ValueError(f"method {commands.name!r} released under a guarantee other than the one it planned; refused")
        release.guarantee = per_patient
        for name in ROW_COUNT_PARAMS:
            release.params.pop(name, None)
        release.params["rows_per_patient"] = int(rows_per_patient)
        return release

    return PlannedRelease(per_patient, execute)


@contextlib.contextmanager
def _interrupted_after(words: str) -> Iterator[None]:
    """A Ctrl-C in the block says ``words`` (what was already charged) instead of a bare "interrupted"."""
    try:
        yield
    except KeyboardInterrupt as exc:
        if exc.args:
            raise
        raise KeyboardInterrupt(words) from None


def _interrupted_words(ledger: Ledger, release_id: str, party: str, dataset_id: str, guarantee: Guarantee, out: Path) -> str:
    """What a Ctrl-C during a reserved release cost: the ledger's settled state of that reservation."""
    from dpadapt.privacy.ledger import file_release_id, short_id

    state = next((e.state for e in ledger.history(party, dataset_id) if e.release_id == release_id), "missing")
    cost = f"ε = {guarantee.epsilon:.4g}, δ = {guarantee.delta:.3g}"
    where = f"the {party} party's dataset {short_id(dataset_id)} in the ledger {ledger.path}"
    if state == "committed":
        written = out.is_file() and file_release_id(out) == release_id
        return (f"after the privacy noise was drawn: {cost} was charged to {where} (release id {release_id[:12]}); "
                f"{out} was {'written' if written else 'not written'}")
    return f"before any privacy noise was drawn: the reservation ({cost}) on {where} was refunded; nothing was charged"


def check_release_delta(args: argparse.Namespace, table: Table, row_bound: int | None = None) -> None:
    """δ ∈ (0, 1), and δ < 1/n in sound mode (a larger δ allows publishing a whole record).

    Not compared with n under ``--relation add_remove``: there n is private, and a refusal that depends on
    it would reveal it; δ is then the owner's choice from a public bound on n. A patient-level release compares
    δ with ``row_bound`` = K × the number of patients, the most rows they may have (a refusal that depended on the
    row count would reveal how many rows a patient has; below 1/row_bound, δ is below 1/n for every row count).
    """
    from dpadapt.validation import check_delta

    n = table.n_rows if row_bound is None else row_bound
    check_delta(args.delta)
    if getattr(args, "relation", "replace_one") == "add_remove":
        return
    if args.delta >= 1.0 / n and getattr(args, "privacy_mode", "sound") != "paper":
        unit = "rows" if row_bound is None else f"rows that {row_bound // args.rows_per_patient} patients may have"
        raise ValueError(f"--delta {args.delta:g} is ≥ 1/n = {1.0 / n:.3g} for the {n} {unit} of {table.path}: refused (use δ ≪ 1/n)")


def _check_out(path: str, force: bool) -> Path:
    out = Path(path)
    if out.is_dir():
        raise ValueError(f"{out} is a folder; give a file name for the output (e.g. {out / 'out.dpadapt'})")
    if out.exists() and not force:
        raise ValueError(f"{out} exists; choose another output file or pass --force to overwrite it")
    if out.exists() and not out.is_file():
        raise ValueError(f"{out} is not a regular file; give a file name for the output")
    if not out.parent.is_dir():
        raise FileNotFoundError(f"{out.parent}: no such directory for the output file")
    if not os.access(out.parent, os.W_OK | os.X_OK):
        raise PermissionError(f"{out.parent}: folder is not writable")
    return out


def budgeted_release(
    plan: PlannedRelease,
    table: Table,
    args: argparse.Namespace,
    out: Path,
    method: str,
    requested: tuple[float | None, float | None] = (None, None),
) -> Release:
    """Charge ``plan`` to the owner's ledger, execute it and write the Release (two-phase; see the ledger)."""
    from dpadapt.privacy.guarantee import Guarantee
    from dpadapt.privacy.ledger import Ledger, fingerprint, short_id
    from dpadapt.release import Release

    guarantee = plan.guarantee
    if not isinstance(guarantee, Guarantee):
        raise TypeError(f"method {method!r} planned a release without a Guarantee")
    if math.isinf(guarantee.epsilon):
        return _public_release(plan, table, args, out, method)
    eps, delta = requested
    if eps is not None and guarantee.epsilon > eps * (1 + 1e-6):
        raise ValueError(f"method {method!r} planned a release costing ε = {guarantee.epsilon:.4g} > --epsilon {eps:g}; refused")
    if delta is not None and guarantee.delta > delta * (1 + 1e-6):
        raise ValueError(f"method {method!r} planned a release costing δ = {guarantee.delta:.3g} > --delta {delta:g}; refused")
    ledger = Ledger(args.ledger)
    party = args.party or guarantee.party
    dataset_id = args.dataset_id or fingerprint(table.path)
    release_id = uuid.uuid4().hex
    try:
        with ledger.reservation(
            party, dataset_id, guarantee, release_id=release_id, method=method, kind="(planned)", path=out
        ) as reservation:
            release = plan.execute()
            if not isinstance(release, Release):
                raise TypeError(f"method {method!r} executed its plan without returning a Release")
            if release.guarantee.to_dict() != guarantee.to_dict():
                raise ValueError(f"method {method!r} released under a guarantee other than the one it planned; refused")
            release.release_id = release_id
            release.params[N_FEATURES_PARAM] = table.n_features
            release.params.update(owner_params(table, args))
            reservation.kind = release.kind
            # the spend was marked final before the first noise draw (and again before any byte is written)
            release.save(out, sign_key=getattr(args, "sign_key", None), before_publish=reservation.publish)
    except KeyboardInterrupt:  # the reservation is settled (committed once noise was drawn): say which
        raise KeyboardInterrupt(_interrupted_words(ledger, release_id, party, dataset_id, guarantee, out)) from None
    with _interrupted_after(f"after {out} was written: {guarantee.summary()} was charged to the {party} party's "
                            f"dataset {short_id(dataset_id)} in the ledger {ledger.path}"):
        budget = ledger.budget(party, dataset_id)
        print(
            f"ledger {ledger.path}: {party} / dataset {short_id(dataset_id)} has now spent {ledger.spent(party, dataset_id).words()}"
            + (f" of its budget (ε = {budget.epsilon:.4g}, δ = {budget.delta:.3g})" if budget else "")
        )
    return release


def _public_release(plan: PlannedRelease, table: Table, args: argparse.Namespace, out: Path, method: str) -> Release:
    """A release without privacy guarantee: only of data declared public, and never charged to a budget."""
    from dpadapt.release import Release

    if not getattr(args, "declare_public", False):
        raise ValueError(
            f"method {method!r} planned a release without privacy guarantee (ε = ∞); refused. "
            "If these data are public, pass --declare-public (nothing is charged to the ledger)"
        )
    release = plan.execute()
    if not isinstance(release, Release) or release.guarantee.to_dict() != plan.guarantee.to_dict():
        raise ValueError(f"method {method!r} released something other than it planned; refused")
    release.params[N_FEATURES_PARAM] = table.n_features
    release.params.update(owner_params(table, args))
    release.save(out, sign_key=getattr(args, "sign_key", None))
    print(f"warning: {out} carries no privacy guarantee (data declared public); nothing was charged to a budget", file=sys.stderr)
    return release


# -- adapt ------------------------------------------------------------------------------------


def run_adapt(args: argparse.Namespace) -> int:
    from dpadapt.release import Release

    commands = methods()[args.method_name]
    if not args.release:
        raise ValueError("give the other party's --release FILE")
    trusted = trusted_keys(args)
    args.sign_key = sign_key(args)
    releases = [Release.load(p, expect_method=commands.file_method(), trusted=trusted) for p in args.release]
    releases += [Release.load(p, expect_method=commands.file_method()) for p in args.own_release]
    if args.epsilon is not None:
        check_release_epsilon(args.epsilon)
    table = load_data(args)
    for path, r in zip(args.release + args.own_release, releases):
        check_agreement(r.params, table, args, path, "release", r.version)
    check_release_dimensions(releases, table)
    out = _check_out(args.out, args.force)
    if args.return_release:
        _check_out(args.return_release, args.force)
        bound_rows_per_patient(table, None)  # the return leg protects these rows: one row per patient
    with step(args, f"adapt {commands.name}"):
        outcome = commands.adapt(args, table, releases)
    if outcome.return_release is not None and not args.return_release:
        raise ValueError(f"method {commands.name!r} sends a release back: give --return-release FILE (nothing was written)")
    guarantees = model_guarantees(outcome.guarantees, releases)
    agreement = {**owner_params(table, args), "source_prior": source_prior(releases), "sources": release_sources(releases)}
    if agreement[CLASS_NAMES_PARAM] is None:  # data without a schema: the label set the release declared
        agreement[CLASS_NAMES_PARAM] = next((r.params[CLASS_NAMES_PARAM] for r in releases
                                             if r.params.get(CLASS_NAMES_PARAM) is not None), None)
    decision = decide_at_adapt(outcome.model, table, args, agreement.get("source_prior"))
    agreement["decision"] = None if decision is None else decision["record"]

    agreement["adapted_on"] = file_sha256(args.data)  # so that score can say when it scores these very rows
    save_model(out, outcome.model, commands.name, guarantees, outcome.metrics, releases, sign_key=args.sign_key,
               n_features=table.n_features, agreement=agreement)
    print(f"wrote {out}: {commands.name} model trained from {', '.join(r.release_id[:12] for r in releases)}")
    for path, r in zip(args.release, releases):
        print(f"  {path}: {r.authenticity()}")
    for g in guarantees.values():
        print(f"  {g.summary()}")
    for key, value in outcome.metrics.items():
        print(f"  {key} = {value:.4f}" if isinstance(value, float) else f"  {key} = {value}")
    for line in [] if decision is None else decision["lines"]:
        print(f"  {line}")
    warn_calibration(commands.name, outcome.model)
    if outcome.return_release is not None:
        back = budgeted_release(outcome.return_release, table, args, Path(args.return_release), commands.name, (args.epsilon, args.delta))
        with _interrupted_after(f"after the return release {args.return_release} was written and charged ({back.guarantee.summary()})"):
            print(f"wrote {args.return_release}: return release {back.release_id}")
            print(f"  {back.guarantee.summary()}")
    elif args.return_release:
        print(f"note: method {commands.name!r} has no return release; {args.return_release} was not written", file=sys.stderr)
    return 0


DECISION_HELP = ("decision rule: bayes (the most probable class at the target's estimated prevalence; default), "
                 "balanced (likelihood ratio > 1), sensitivity:S or alert_rate:A (binary); docs/decisions.md")


PREVALENCE_HELP = ("the estimator of the target's prevalence the decision rule and `predict` use: mean (the mean "
                   "calibrated probability), em (Saerens et al. EM: the one to use when the probabilities are known to be "
                   "calibrated) or source (the source's prior, no adaptation); docs/decisions.md")


def add_prevalence_argument(p: argparse.ArgumentParser, default_text: str) -> None:
    """``--prevalence`` on the commands that fit a decision rule (adapt, predict, score, report)."""
    p.add_argument("--prevalence", default=None, choices=("mean", "em", "source"), help=f"{PREVALENCE_HELP}; {default_text}")


def decide_at_adapt(model: Any, table: Table, args: argparse.Namespace, prior: list[float] | None) -> dict[str, Any] | None:
    """The decision rule fitted on the adapting party's own rows (no labels, no privacy cost): what the model file
    records (``decision``) and the lines ``adapt`` prints; ``None`` for a model without class probabilities."""
    from dpadapt.decision import DecisionRule, parse_rule

    rule, target = parse_rule(args.decision or "bayes")
    X = getattr(table, "X", None)
    if X is None or not hasattr(model, "predict_proba"):
        if args.decision:
            raise ValueError(f"--decision {args.decision}: this model gives no class probabilities")
        return None
    fitted = DecisionRule(model, rule, target, source_prior=prior, prevalence=args.prevalence).fit(X)
    record = {"rule": rule, "target": target, "threshold": fitted.threshold_, "prevalence": fitted.prevalence_.to_dict(),
              "rows": int(X.shape[0])}
    names = getattr(table, "classes", None)
    return {"record": record, "lines": [fitted.prevalence_.line(names) + " — on these rows, no labels", fitted.describe()]}


class CalibrationWarning(UserWarning):
    """The method's probabilities are known to be badly calibrated (``benchmarks/decisions``)."""


def warn_calibration(method: str, model: Any) -> None:
    """A one-line warning when the method's probabilities are known to be badly calibrated (:func:`decision.calibration_warning`)."""
    import warnings

    from dpadapt.decision import calibration_warning

    line = calibration_warning(method, model)
    if line:
        warnings.warn(line, CalibrationWarning, stacklevel=2)


def release_sources(releases: list[Release]) -> list[dict[str, Any]]:
    """What the model was trained from, for its report: each release's public facts (no count of the receiver's rows)."""
    out = []
    for r in releases:
        n = r.params.get("n_source") if r.owner == "source" else r.params.get("n_target")
        out.append({"release_id": r.release_id, "owner": r.owner, "method": r.method, "kind": r.kind,
                    "created": r.created, "rows": None if n is None else int(n), "signer": r.signer,
                    "epsilon": r.guarantee.epsilon if math.isfinite(r.guarantee.epsilon) else None,
                    "delta": r.guarantee.delta})
    return out


def source_prior(releases: list[Release]) -> list[float] | None:
    """The source's class prior from a release's noisy per-class ``counts`` (post-processing: no privacy cost).

    For a label-shift correction at the receiver (``dpadapt score``); each count is floored at 1 (noise can
    make a small count negative). ``None`` when no release carries per-class counts.
    """
    import numpy as np

    for r in releases:
        counts = r.arrays.get("counts") if r.owner == "source" else None
        if counts is not None and counts.ndim == 1 and counts.size >= 2 and np.all(np.isfinite(counts)):
            floored = np.maximum(np.asarray(counts, dtype=np.float64), 1.0)
            return (floored / floored.sum()).tolist()
    return None


def check_release_dimensions(releases: list[Release], table: Table) -> None:
    """Reject data whose feature dimension differs from the release owner's."""
    d = table.n_features
    for r in releases:
        expected = r.params.get(N_FEATURES_PARAM)
        if expected is not None and int(expected) != d:
            raise ValueError(
                f"{table.path} has {d} features but release {r.release_id[:12]} ({r.method}/{r.kind}) was computed "
                f"on data with {expected} features; both parties must use the same feature space"
            )


def model_guarantees(given: dict[str, Guarantee], releases: list[Release]) -> dict[str, Guarantee]:
    """The model's guarantee per party: the method's, else the composition of what each party released.

    The receiver's own data, used without noise, is reported as non-private unless the method says otherwise.
    """
    from dpadapt.privacy.guarantee import Guarantee, compose_guarantees

    out = dict(given)
    by_party: dict[str, list[Guarantee]] = {}
    for g in [r.guarantee for r in releases]:
        by_party.setdefault(g.party, []).append(g)
    for party, gs in by_party.items():
        if party not in out:
            # RDP composition reported at the largest δ of the parts (basic composition when events are missing)
            out[party] = gs[0] if len(gs) == 1 else compose_guarantees(gs, delta=max(g.delta for g in gs))
    for party in ("source", "target"):
        if party not in out:
            out[party] = dataclasses.replace(
                Guarantee.non_private(party, "this party's own data were used by the model without noise"),
                details={"kept": "its own rows (used on its own machine to adapt the model; the model reflects them)"})
    return out


def save_model(
    path: Path,
    model: Any,
    method: str,
    guarantees: dict[str, Guarantee],
    metrics: dict[str, Any],
    releases: list[Release],
    sign_key: Any = None,
    n_features: int | None = None,
    agreement: dict[str, Any] | None = None,
) -> None:
    """Write the model (only what predicts) and its guarantees (:func:`dpadapt.modelio.save_model`).

    ``agreement``: the schema fingerprint and class names of the table it was adapted on
    (:func:`dpadapt.cli.agreement.owner_params`); ``score`` / ``predict`` check the data against them.
    """
    meta = {
        "method": method,
        "n_features": n_features,
        "metrics": {k: (float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v) for k, v in metrics.items()},
        "releases": [r.release_id for r in releases],
        **(agreement or {}),
    }
    modelio.save_model(path, model, guarantees, meta, sign_key=sign_key)


def load_model(path: str | os.PathLike, trusted: list[Any] | tuple = ()) -> dict[str, Any]:
    """Read a model file written by ``dpadapt adapt`` (never unpickles): model, guarantees, metadata."""
    load_plugins()  # plugins may register model kinds
    loaded = modelio.load_model(path, trusted)
    return {
        "loaded": loaded,
        "model": loaded.model,
        "method": loaded.meta.get("method", "?"),
        "version": loaded.meta.get("version"),
        "created": loaded.meta.get("created"),
        "metrics": loaded.meta.get("metrics", {}),
        "releases": loaded.meta.get("releases", []),
        "guarantees": loaded.guarantees,
        "meta": loaded.meta,
    }
