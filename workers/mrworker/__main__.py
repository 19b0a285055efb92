import sys

from mrworker.cli import main

sys.exit(main())
