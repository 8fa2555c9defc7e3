"""kombu's filesystem transport, with messages that appear whole.

kombu's filesystem channel creates a message file and then writes into it. A worker listing the
folder in between moves the still empty file away, fails to decode it, and stops with
"Unrecoverable error: JSONDecodeError" (seen under ``make demo`` when beat sent a task while the
worker polled). Here a message is written under a name no consumer looks at and then renamed into
place, which is atomic on one filesystem.
"""

from __future__ import annotations

import os
import uuid
from time import monotonic
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps

PARTIAL = ".part"  # a message being written: consumers only take names ending in ".<queue>.msg"


class Channel(filesystem.Channel):
    def _put(self, queue: str, payload: Any, **kwargs: Any) -> None:
        """Put ``payload`` onto ``queue``: written aside, then renamed into the folder."""
        name = f"{round(monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        partial = final + PARTIAL
        try:
            with open(partial, "wb") as f:
                f.write(str_to_bytes(dumps(payload)))
            os.replace(partial, final)
        except OSError as exc:
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc


class Transport(filesystem.Transport):
    Channel = Channel
