import sys

from paleozoic.cli import main

sys.exit(main())
