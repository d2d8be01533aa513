"""View models of the TUI: pure state and logic with no urwid import (a test checks it), so each
is tested as plain Python and the widgets only adapt them."""
