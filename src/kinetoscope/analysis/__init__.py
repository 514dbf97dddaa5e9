"""Pure measurements on a `Trace`: no printing, no judgement of good or bad."""
