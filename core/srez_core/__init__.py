"""The bottom layer: what every part of ``srez`` may import, and which imports nothing of it.

* :mod:`~srez_core.atomic`: atomic writes (a file is its old or its new version, never a mix);
* :mod:`~srez_core.clock`: the clock and the UTC timestamp format;
* :mod:`~srez_core.aio`: background tasks that are never garbage-collected mid-flight;
* :mod:`~srez_core.wire_version`: the versions the wire states;
* :mod:`~srez_core.field_docs`: field docstrings read into a JSON schema when one is asked for.
"""
