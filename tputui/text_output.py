"""Where a command's text goes: stdout, or a file written whole (never half-written), or a device /
FIFO written in place (renaming a temp file over /dev/null would replace it)."""
from __future__ import annotations

import os
import stat
import sys

from tputui.errors import UserError


def write_text(text: str, output: str | None) -> None:
    if not output:
        sys.stdout.write(text)
        return
    try:
        if is_special_file(output):
            with open(output, "w", encoding="utf-8", newline="") as f:
                f.write(text)
            return
        from tputui.data.files import atomic_open

        with atomic_open(output, "w", encoding="utf-8", newline="") as f:
            f.write(text)
    except OSError as e:
        raise UserError(f"cannot write {output}: {(e.strerror or str(e)).lower()}") from None


def is_special_file(path: str) -> bool:
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)
