"""utils.atomic_yaml_write: the real one writes YAML through a temp file and
a rename; this fake writes JSON (a subset of YAML) the same way."""

import json
import os
import tempfile
from pathlib import Path


def atomic_yaml_write(path, data, sort_keys=False, **_kw) -> None:
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=str(path.parent), prefix=".tmp-", suffix=".yaml")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(data, f, sort_keys=sort_keys, indent=2)
    os.replace(tmp, path)
