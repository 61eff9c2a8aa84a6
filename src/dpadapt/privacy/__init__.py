"""Privacy core: guarantees, mechanisms, accounting (dp-accounting) and audits.

dp-accounting logs through absl (e.g. one ``_compute_log_a_frac failed to converge`` warning per
RDP order it drops, hundreds per fit); those records are dropped here, for library users as for the
CLI. Other absl logging is left alone.
"""

import logging as _logging

from dpadapt.privacy import accounting
from dpadapt.privacy.guarantee import Guarantee, compose_guarantees
from dpadapt.privacy.mechanisms import (
    MechanismOutput,
    clip_rows,
    gaussian_mechanism,
    gaussian_matrix_release,
    laplace_mechanism,
    randomized_response,
    report_noisy_min,
)



def _drop_dp_accounting_records(record: _logging.LogRecord) -> bool:
    return "dp_accounting" not in (record.pathname or "")


def _quiet_dp_accounting() -> None:
    try:
        import absl.logging
    except ImportError:  # pragma: no cover - dp-accounting always brings absl
        return
    logger = absl.logging.get_absl_logger()
    if _drop_dp_accounting_records not in logger.filters:
        logger.addFilter(_drop_dp_accounting_records)


_quiet_dp_accounting()

__all__ = [
    "Guarantee",
    "MechanismOutput",
    "accounting",
    "clip_rows",
    "compose_guarantees",
    "gaussian_matrix_release",
    "gaussian_mechanism",
    "laplace_mechanism",
    "randomized_response",
    "report_noisy_min",
]
