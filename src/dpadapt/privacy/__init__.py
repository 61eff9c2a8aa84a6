"""Privacy core: guarantees, mechanisms, accounting (dp-accounting) and audits.

dp-accounting is imported where an event is built or accounted (:mod:`dpadapt.privacy.accounting`), not with this
package; its absl log noise is dropped there.
"""

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
