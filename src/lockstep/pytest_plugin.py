"""pytest plugin for lockstep (filled in by the lockstep issue)."""
