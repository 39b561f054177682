#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# Reads {"name": ["key=value", ...], ...} on stdin and prints {"name": <OmegaConf.from_dotlist(list) as a
# plain container>} (or {"name": {"error": "..."}}): how Hydra / OmegaConf read written overrides.
import json
import sys

from omegaconf import OmegaConf

out = {}
for name, dotlist in json.load(sys.stdin).items():
    try:
        out[name] = OmegaConf.to_container(OmegaConf.from_dotlist(dotlist))
    except Exception as e:  # noqa: BLE001 - every failure is reported to the test
        out[name] = {"error": f"{type(e).__name__}: {e}"}
json.dump(out, sys.stdout)
