"""Fakes of external services for tests (real protocols, scripted behaviour).

* :mod:`fakes.openai_server`: a scripted OpenAI-compatible chat server; the ``fake_openai``
  fixture (``tests/conftest.py``) gives each test a clean script on a server shared by its module.
"""
