"""tputui: a keyboard-first terminal UI for XProf / TensorBoard profiles."""

__version__ = "0.1.0"
