"""Log predictive forms of the conjugate families for the samplers' compiled kernels.

See :mod:`.form` for the protocol. Each family module holds the form of one family (built by the
family's :meth:`~pymc_partition.ConjugateFamily.predictive_form`); :mod:`.graph` is the form of
any family, evaluating its compiled pytensor graph per candidate.
"""

from .beta_bernoulli import beta_bernoulli_form
from .dirichlet_categorical import dirichlet_categorical_form
from .form import FormMismatch, PredictiveForm, check_form
from .gamma_poisson import gamma_poisson_form
from .graph import graph_form
from .normal_inverse_gamma import normal_inverse_gamma_form
from .normal_inverse_wishart import normal_inverse_wishart_form
from .spike_slab import spike_slab_form

__all__ = [
    "PredictiveForm",
    "FormMismatch",
    "check_form",
    "graph_form",
    "normal_inverse_gamma_form",
    "normal_inverse_wishart_form",
    "spike_slab_form",
    "beta_bernoulli_form",
    "dirichlet_categorical_form",
    "gamma_poisson_form",
]
