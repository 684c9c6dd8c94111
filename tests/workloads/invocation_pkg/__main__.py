"""Writes how it was invoked to the path given as first argument (no TensorFlow needed)."""

import json
import os
import sys

with open(sys.argv[1], "w") as f:
    json.dump(
        {
            "argv": sys.argv,
            "name": __name__,
            "cwd": os.getcwd(),
            "path0": sys.path[0],
            "file": __file__,
        },
        f,
    )
