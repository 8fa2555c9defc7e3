"""``python -m gpuplatform_cli``: the same as the ``gpuplatform`` console script."""

import sys

from gpuplatform_cli.main import main

sys.exit(main())
