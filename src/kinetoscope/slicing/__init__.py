"""`kinetoscope slice`: cut a trace down to a few steps or a time window, streaming.

`scan` finds event byte spans in a chunked document, `columns` decodes the few
fields that decide, `plan` decides (first pass), `write` copies (second pass).
"""

from .plan import Selection, parse_steps, parse_window
from .write import SLICE_KEY, SliceResult, slice_trace

__all__ = ["SLICE_KEY", "Selection", "SliceResult", "parse_steps", "parse_window", "slice_trace"]
