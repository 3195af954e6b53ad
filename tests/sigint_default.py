"""A child process that Ctrl-C reaches: its SIGINT reset to the default before it starts.

A shell starts background commands with SIGINT ignored, and an ignored SIGINT is inherited: a
test suite run as `cmd &` (or under nohup) would spawn CLIs that never see the SIGINT a test
sends, and Python keeps it ignored rather than raising KeyboardInterrupt. Pass as `preexec_fn`.
"""
import signal


def sigint_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
