"""What every test shares: an environment that does not depend on the caller's shell.

The caller's ``KAIROS_*`` variables (and the others kairos reads) are removed at
import time, before any test module reads them; see :mod:`environment_support`.
"""

from __future__ import annotations

from environment_support import clean_environment

clean_environment()
