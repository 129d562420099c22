"""What a failed recording is, for the programs that catch it: the error and
the exit status. Apart from the codec and the writer so that a program can
name both without loading them (a dashboard's first frame, issue 28)."""

from __future__ import annotations


class RecordingError(Exception):
    """The recording cannot be written or read. The message is for the user."""

    code = "recording"
    exit_code = 2


RECORDING_INCOMPLETE_EXIT = 74
"""Exit status of a run whose recording could not be completed (a write
error mid-run). sysexits.h's EX_IOERR: apart from 0/1/2 and HTTP's 3..12."""
