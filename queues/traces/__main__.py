"""``python -m queues.traces {philly,alibaba,itp} --output scenario.yaml [options]``."""

import sys

from queues.traces.cli import main

sys.exit(main())
