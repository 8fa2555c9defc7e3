"""``python -m gpusched.sim.traces {philly,alibaba,itp} --output scenario.yaml [options]``."""

import sys

from gpusched.sim.traces.cli import main

sys.exit(main())
