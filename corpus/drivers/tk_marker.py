"""The start marker for the Python drivers: one write(2) of TK_START to stdout."""
import os


def start_marker():
    os.write(1, b"TK_START\n")
