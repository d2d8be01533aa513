"""The recorder: one episode hosted and written into a run folder, the same way by every host.

The daemon (one run behind its API), the ``inline`` backend (a run in the launcher's process) and
the launcher's background tasks use this package; none of it does networking, so importing it pulls
in no server library (``tests/test_layering.py`` checks that it never imports aiohttp).

* :mod:`~srez_daemon.record.episode`: the simulator plus everything a run folder must show, and
  the only writer of the dialog;
* :mod:`~srez_daemon.record.world`: the config files' changes, computed from the texts in memory
  (one source for the live diff, the files view and ``final.patch``);
* :mod:`~srez_daemon.record.notes`: the caps on the agent's own notes;
* :mod:`~srez_daemon.record.folder`: where each file of a run folder lives, and the caps' defaults;
* :mod:`~srez_daemon.record.storage`: the fsynced, append-only dialog and its writer.

Atomic writes, clocks and background tasks are not the recorder's: they live in :mod:`srez_core`.
"""
