"""``srez view``: the run view in a browser, beside the TUI, on the same sources and view models.

* :mod:`.catalog`: the runs list's rows and queries (pure);
* :mod:`.results_index`: the finished runs of a results folder, refreshed incrementally;
* :mod:`.views`: one run's views, from a results folder or a live daemon alike;
* :mod:`.present`: those views as JSON, and the assistant's Markdown as sanitised HTML;
* :mod:`.matrix`: the leaderboard and the task × agent matrix;
* :mod:`.security`: the token, Host, Origin and response-header rules;
* :mod:`.live`: live runs (stream, Stop/Remove/Detach, terminal), never in hosted mode;
* :mod:`.app`: the routes; ``static/``: the page (HTML, CSS and one JavaScript module).
"""
